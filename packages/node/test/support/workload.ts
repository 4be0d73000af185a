/**
 * The workload of the fault tests: replicas of the {@link ledger} model that keep incrementing
 * while a fault is injected, recorded in a {@link History}, then settled and checked.
 */
import { onTestFinished } from "vitest";
import {
  openSynchronizer,
  type OpenSynchronizerOptions,
  type UpdateOptions,
} from "@statesync/node";
import {
  assertVerdict,
  checkHistory,
  finalStates,
  logRecords,
  type History,
  type LedgerSync,
  type Verdict,
} from "./checker.js";
import { ledger, type LedgerState } from "./models.js";

type LedgerOptions = OpenSynchronizerOptions<LedgerState, (typeof ledger)["commands"]>;

/**
 * Opens a ledger replica over TCP with fault-test defaults: no disk snapshots, no automatic
 * compaction, reconnect every 100 ms forever, JetStream requests time out after 2 s.
 */
export function openLedger(
  options: Omit<LedgerOptions, "model"> & Partial<Pick<LedgerOptions, "model">>,
): Promise<LedgerSync> {
  return openSynchronizer({
    model: ledger,
    snapshots: false,
    compaction: false,
    requestTimeoutMs: 2_000,
    ...options,
    // Connect options apply to the connection made from `servers` (a given one is VALIDATION).
    ...(options.connection === undefined && {
      connectOptions: {
        reconnectTimeWait: 100,
        maxReconnectAttempts: -1,
        pingInterval: 1_000,
        ...options.connectOptions,
      },
    }),
  }) as Promise<LedgerSync>;
}

/** One client of a workload: its name, replica and which kind of increments it invokes. */
export interface WorkloadClient {
  readonly name: string;
  readonly sync: LedgerSync;
  readonly kind: "conditional" | "unconditional" | "mixed";
  /** Sleep between two operations of this client, ms (default: the workload's `pauseMs`). */
  readonly pauseMs?: number;
}

/** A running workload (see {@link startWorkload}). */
export interface Workload {
  /** Outcomes so far that were `ok`. */
  okCount(): number;
  /** Resolves once `n` more operations ended `ok` (after the call), or rejects after `timeoutMs`. */
  waitForOk(n: number, timeoutMs?: number): Promise<void>;
  /** Stops invoking and waits for the operations in flight to end. */
  stop(): Promise<void>;
}

/**
 * Starts one sequential loop of increments per client, recorded in `history`, until `stop()`.
 * `pauseMs` sleeps between operations of a client (default 0).
 */
export function startWorkload(
  history: History,
  clients: readonly WorkloadClient[],
  options: { update?: UpdateOptions; pauseMs?: number } = {},
): Workload {
  let stopped = false;
  let ok = 0;
  const waiters = new Set<{ target: number; resolve: () => void }>();
  const loops = clients.map(async (c, index) => {
    for (let i = 0; !stopped; i++) {
      const kind = c.kind === "mixed" ? (i % 2 === 0 ? "conditional" : "unconditional") : c.kind;
      const outcome = await history.increment(c.sync, c.name, kind, 1, options.update);
      if (outcome.status === "ok") {
        ok += 1;
        for (const w of [...waiters]) {
          if (ok >= w.target) {
            waiters.delete(w);
            w.resolve();
          }
        }
      } else if (outcome.status === "failed" && outcome.code === "CLOSED") {
        return;
      } else {
        // Do not spin while the log is unreachable.
        await sleep(50 + index * 7);
      }
      const pause = c.pauseMs ?? options.pauseMs;
      if (pause) await sleep(pause);
    }
  });
  return {
    okCount: () => ok,
    waitForOk(n, timeoutMs = 30_000) {
      return new Promise<void>((resolve, reject) => {
        const w = { target: ok + n, resolve: () => (clearTimeout(timer), resolve()) };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`${n} more ok outcomes not reached in ${timeoutMs} ms (ok: ${ok})`));
        }, timeoutMs);
        waiters.add(w);
      });
    },
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Closes `resources` when the current test ends, passed or failed (close is idempotent). */
export function closeAtEnd(
  ...resources: Array<{ close(): Promise<unknown> } | { stop(): Promise<unknown> } | undefined>
): void {
  onTestFinished(async () => {
    await Promise.all(
      resources.map((r) =>
        (r === undefined ? undefined : "close" in r ? r.close() : r.stop())?.catch(() => undefined),
      ),
    );
  });
}

/**
 * Brings every replica to the log's latest revision: `fetchUpdates()` on each (retried while the
 * log is unreachable) and `waitFor` the highest revision any of them reached. Throws with the
 * replicas' statuses when it does not happen within `timeoutMs`, or at once when one stalled.
 */
export async function settle(replicas: readonly LedgerSync[], timeoutMs = 30_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let latest = 0;
  for (let round = 0; ; round++) {
    try {
      const revisions = await Promise.all(
        replicas.map((r) => withTimeout(r.fetchUpdates(), deadline - Date.now())),
      );
      latest = Math.max(...revisions);
      await Promise.all(replicas.map((r) => withTimeout(r.waitFor(latest), deadline - Date.now())));
      // One more round: nothing appended while we waited.
      const again = await Promise.all(replicas.map((r) => r.fetchUpdates()));
      if (again.every((r) => r === latest)) return latest;
    } catch (e) {
      const stalled = replicas.find((r) => r.status === "stalled");
      if (stalled) throw new Error(`a replica stalled: ${stalled.stallReason?.message}`);
      if (Date.now() > deadline) {
        throw new Error(
          `replicas did not settle in ${timeoutMs} ms: ${replicas.map((r) => `${r.status}@${r.revision}`).join(", ")} (${String(e)})`,
        );
      }
      await sleep(Math.min(1_000, 100 * 2 ** round));
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), Math.max(0, ms));
    p.then(
      (v) => (clearTimeout(timer), resolve(v)),
      (e: unknown) => (clearTimeout(timer), reject(e)),
    );
  });
}

/**
 * Settles `replicas`, reads the log (when `withLog`, default true: the whole history must be
 * retained) and checks the run; throws listing the violations. Returns the verdict.
 */
export async function verify(
  history: History,
  replicas: Record<string, LedgerSync>,
  options: { withLog?: boolean; settleTimeoutMs?: number } = {},
): Promise<Verdict> {
  const list = Object.values(replicas);
  await settle(list, options.settleTimeoutMs);
  const log = options.withLog === false ? undefined : await logRecords(list[0]!);
  const verdict = checkHistory({
    ops: history.ops,
    replicas: finalStates(replicas),
    observations: history.observations,
    log,
  });
  assertVerdict(verdict, history);
  return verdict;
}
