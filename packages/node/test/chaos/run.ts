/**
 * Runs one chaos schedule against a real nats-server and checks the recorded history (see
 * chaos.test.ts for what is checked and why).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { stateHash, type NatsServer } from "@statesync/node";
import { uniqueStream } from "../helpers.js";
import { checkHistory, History, type LedgerSync, type Outcome } from "../support/checker.js";
import type { LedgerState } from "../support/models.js";
import { settle, sleep } from "../support/workload.js";
import { outcomeOf } from "./outcome.js";
import { checkResolvedRevisions } from "./revisions.js";
import type { Schedule, Step } from "./schedule.js";
import { ChaosSystem, type Slot } from "./system.js";

/** How long an update may take from its call, ms (then `UNKNOWN_OUTCOME` or `UNAVAILABLE`). */
const OUTCOME_TIMEOUT_MS = 4_000;

/** What one run did and found. */
export interface RunResult {
  readonly violations: string[];
  /** What happened, one event a line, with its time from the start in ms. */
  readonly trace: string[];
  readonly summary: Record<string, number>;
  readonly finalRevision: number;
  readonly operations: number;
}

/** Runs `schedule` on `server` (left running, possibly restarted) and checks the history. */
export async function runSchedule(server: NatsServer, schedule: Schedule): Promise<RunResult> {
  const history = new History();
  const dir = await mkdtemp(path.join(tmpdir(), "statesync-chaos-"));
  const stream = uniqueStream("CHAOS");
  const system = await ChaosSystem.start(
    server,
    dir,
    schedule.replicas,
    { stream, requestTimeoutMs: 2_000, autoCompaction: schedule.autoCompaction },
    history,
  );
  const started = Date.now();
  const trace: string[] = [];
  const note = (line: string) => trace.push(`${String(Date.now() - started).padStart(6)} ${line}`);
  const inFlight = new Set<Promise<unknown>>();
  const track = (p: Promise<unknown>) => {
    const q = p
      .catch((e: unknown) => note(`uncaught ${String(e)}`))
      .finally(() => inFlight.delete(q));
    inFlight.add(q);
  };
  let restarting: Promise<void> | undefined;
  /** Updates still pending once their replica's `close()` resolved (it waits for them). */
  const unfinishedAtClose: string[] = [];
  try {
    for (const slot of system.slots) await system.open(slot, "synced");
    note(`opened ${schedule.replicas} replicas on ${stream}`);
    for (const step of schedule.steps) {
      const wait = started + step.at - Date.now();
      if (wait > 0) await sleep(wait);
      const slot = system.slots[step.replica]!;
      if (step.kind === "restart") {
        if (restarting) continue;
        track((restarting = restart(server, step, note).finally(() => (restarting = undefined))));
      } else track(perform({ system, history, note, unfinishedAtClose }, slot, step));
    }
    note("schedule done; waiting for operations in flight");
    await Promise.race([Promise.all([...inFlight]), sleep(OUTCOME_TIMEOUT_MS * 4)]);
    await restarting;
    system.heal();
    for (const slot of system.slots) {
      if (!slot.sync && !slot.busy) await system.open(slot, "restored");
    }
    await until(() => system.slots.every((s) => s.sync && !s.busy), 20_000);
    const replicas = system.slots.map((s) => s.sync!);
    const revision = await settle(replicas, 60_000);
    note(`settled at revision ${revision}`);
    const late = await system.openFresh("late");
    const all = [...replicas, late];
    const finals = all.map((r, i) => ({
      client: i < replicas.length ? system.slots[i]!.name : "late",
      revision: r.revision,
      state: r.state as LedgerState,
    }));
    await late.close();
    const verdict = checkHistory({
      ops: history.ops,
      replicas: finals,
      observations: history.observations,
    });
    const violations = [
      ...verdict.violations,
      ...unfinishedAtClose,
      ...checkResolvedRevisions(history.ops, finals[0]!.state.ops, history.observations),
    ];
    const hashes = new Set(finals.map((f) => `${f.revision}:${stateHash(f.state)}`));
    if (hashes.size !== 1) {
      violations.push(
        `replicas did not converge: ${finals.map((f) => `${f.client}@${f.revision}`).join(", ")}`,
      );
    }
    for (const e of history.reported) note(`event error ${e.client} ${e.code}: ${e.message}`);
    return {
      violations,
      trace,
      summary: history.summary(),
      finalRevision: revision,
      operations: history.ops.length,
    };
  } catch (e) {
    note(`run failed: ${String(e)}`);
    return {
      violations: [`the run did not complete: ${String(e)}`],
      trace,
      summary: history.summary(),
      finalRevision: -1,
      operations: history.ops.length,
    };
  } finally {
    await system.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function restart(server: NatsServer, step: Step, note: (l: string) => void): Promise<void> {
  note("server SIGKILL");
  await server.kill("SIGKILL");
  await sleep(step.ms);
  await server.restart();
  note("server restarted");
}

/** What {@link perform} records into. */
interface RunContext {
  readonly system: ChaosSystem;
  readonly history: History;
  readonly note: (line: string) => void;
  readonly unfinishedAtClose: string[];
}

/** Op ids of the updates invoked on each synchronizer and not ended yet. */
const invoked = new WeakMap<LedgerSync, Set<string>>();

/** Performs one replica step, recording its outcome in `history` and `note`. */
async function perform(ctx: RunContext, slot: Slot, step: Step): Promise<void> {
  const { system, history, note } = ctx;
  const sync = slot.sync;
  switch (step.kind) {
    case "cut":
      note(`${slot.name} cut, refused ${step.ms} ms`);
      slot.proxy.cutAll();
      slot.proxy.setRefusing(true);
      await sleep(step.ms);
      slot.proxy.setRefusing(false);
      return;
    case "pause":
      note(`${slot.name} paused ${step.ms} ms`);
      await slot.proxy.stallAfter(0, step.ms);
      return;
    case "lostAck":
      note(`${slot.name} armed: cut after its next publish, refused ${step.ms} ms`);
      void slot.proxy
        .cutAfterPublish((s) => s.startsWith(`${system.options.stream}.`), {
          refuseForMs: step.ms,
        })
        .then(() => note(`${slot.name} cut after a publish`));
      return;
    case "reopen": {
      if (!sync || slot.busy) return;
      slot.busy = true;
      try {
        note(`${slot.name} close at ${sync.revision}`);
        await system.close(slot);
        note(`${slot.name} closed`);
        // close() waits for the appends already sent and rejects the rest (docs/guarantees.md):
        // once it resolved (and the callers' continuations ran), no update of it is pending.
        await new Promise((r) => setImmediate(r));
        for (const opId of invoked.get(sync) ?? []) {
          ctx.unfinishedAtClose.push(
            `${opId} was still pending after ${slot.name}'s close() resolved`,
          );
        }
        await sleep(step.ms);
        const reopened = await system.open(slot, "restored");
        note(`${slot.name} reopened at ${reopened.revision} (${reopened.status})`);
      } finally {
        slot.busy = false;
      }
      return;
    }
    case "compact": {
      if (!sync) return;
      try {
        const r = await sync.compact();
        note(`${slot.name} compact ok at ${r.revision}`);
      } catch (e) {
        note(`${slot.name} compact failed ${(e as { code?: string }).code ?? String(e)}`);
      }
      return;
    }
    default: {
      if (!sync) return;
      const opId = history.nextOpId(slot.name);
      const kind = step.kind === "unconditional" ? "unconditional" : "conditional";
      history.invoke({ opId, client: slot.name, kind, by: 1 });
      const mine = invoked.get(sync) ?? new Set<string>();
      invoked.set(sync, mine);
      mine.add(opId);
      const options = { outcomeTimeoutMs: OUTCOME_TIMEOUT_MS };
      let outcome: Outcome;
      try {
        const r =
          step.kind === "command"
            ? await sync.update("increment", { by: 1, opId }, options)
            : step.kind === "recipe"
              ? await sync.update((draft) => {
                  draft.count += 1;
                  draft.ops.push(opId);
                }, options)
              : await sync.updateUnconditionally("increment", { by: 1, opId }, options);
        outcome = { status: "ok", revision: r.revision };
      } catch (e) {
        outcome = outcomeOf(e);
      }
      mine.delete(opId);
      history.complete(opId, outcome);
      note(
        `${opId} ${step.kind} ${outcome.status} ${"revision" in outcome ? outcome.revision : outcome.code}`,
      );
    }
  }
}

async function until(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error("replicas did not reopen in time");
    await sleep(50);
  }
}

export type { LedgerSync };
