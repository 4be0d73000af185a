import { MemoryLog, type LogEntry, type StateSyncError } from "@statesync/core";
import { afterEach, describe, expect, it } from "vitest";
import { open, until } from "./fixtures.js";

/**
 * A trial (stop 28): an unconditional update whose first send went unanswered is re-sent only on
 * the tail its look-up checked (appender invariant 2). While other writers kept appending (about
 * 40 a second, in the same process), every re-send conflicted and every such update failed
 * `UNKNOWN_OUTCOME` at its deadline, none stored: the contention rules (intents) covered
 * conditional updates only. Here another writer's command lands before each re-send, until it
 * holds back (it saw an intent of the re-sending writer); before the fix none ever came.
 */

const enc = new TextDecoder();
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** The victim's handle: runs `beforeConditional` before each conditional append (its re-sends). */
class Loaded extends MemoryLog {
  beforeConditional: ((data: Uint8Array) => Promise<void>) | undefined;
  /** Unconditional appends to fail without storing them, as a send that got no answer. */
  unanswered = 0;
  /** How long each range read waits before it starts, ms (a look-up's scan on a busy server). */
  readDelayMs = 0;
  override async *read(from: number, to: number): AsyncIterable<LogEntry> {
    if (this.readDelayMs > 0) await sleep(this.readDelayMs);
    yield* super.read(from, to);
  }
  override async appendConditional(data: Uint8Array, expected: number, id: string, o?: object) {
    await this.beforeConditional?.(data);
    return super.appendConditional(data, expected, id, o);
  }
  override appendUnconditional(data: Uint8Array, id: string, o?: object) {
    if (this.unanswered > 0 && kindOf(data) === "command") {
      this.unanswered -= 1;
      this.failNextAppends(1); // taken by this append: nothing runs in between
    }
    return super.appendUnconditional(data, id, o);
  }
}

const kindOf = (data: Uint8Array) => (JSON.parse(enc.decode(data)) as { kind: string }).kind;

/** The decoded entries of `log`, in order. */
async function entries(log: MemoryLog): Promise<Array<Record<string, unknown>>> {
  const out: Array<Record<string, unknown>> = [];
  for await (const e of log.read(1, Infinity)) out.push(JSON.parse(enc.decode(e.data)));
  return out;
}

/** The victim's replica on a {@link Loaded} log, and another writer's on the same entries. */
async function victimAndLoader() {
  const log = new Loaded();
  const victim = await open(log, { clientId: "victim", compaction: false });
  const loader = await open(log.handle(), { clientId: "loader", compaction: false });
  stops.push(
    () => victim.close(),
    () => loader.close(),
  );
  return { log, victim, loader };
}

describe("an unconditional update re-sent while other writers keep appending", () => {
  it("commits, once: the re-sending writer announces itself and the others let it go", async () => {
    const { log, victim, loader } = await victimAndLoader();
    let intentSeen = false;
    let loads = 0;
    const others: Promise<unknown>[] = [];
    log.beforeConditional = async () => {
      loads += 1;
      // Another writer's command lands first, unless it holds back for the victim's intent.
      const other = loader.updateUnconditionally("increment", { by: 1 });
      others.push(other);
      for (;;) {
        const done = await Promise.race([other.then(() => true), sleep(5).then(() => false)]);
        if (done) return;
        intentSeen ||= (await entries(log)).some((e) => e.kind === "intent");
        if (intentSeen) return;
      }
    };
    log.failNextAppends(1); // no answer: as far as the victim knows, it may have landed
    const result = await victim
      .updateUnconditionally("increment", { by: 1000 }, { outcomeTimeoutMs: 4_000 })
      .then(
        (r) => r.revision,
        (e: Error) => e,
      );
    log.beforeConditional = undefined;
    expect(result).toBeTypeOf("number");
    expect(intentSeen).toBe(true);
    expect(loads).toBeGreaterThanOrEqual(3); // it lost races before it announced itself
    expect(await Promise.all(others)).toHaveLength(loads); // the held ones went on after it
    const commands = (await entries(log)).filter((e) => e.kind === "command");
    expect(commands.filter((e) => e.client === "victim")).toHaveLength(1);
    await loader.synced();
    await victim.synced();
    expect(victim.state.count).toBe(1000 + commands.length - 1); // each applied once
    expect(loader.state).toEqual(victim.state);
  });

  it("commits while its own replica keeps committing conditional updates", async () => {
    const log = new Loaded();
    const victim = await open(log, { clientId: "victim", compaction: false });
    stops.push(() => victim.close());
    let committed = 0;
    let running = true;
    const loop = (async () => {
      while (running) {
        await victim.update((d) => void (d.count += 1));
        committed += 1;
        await new Promise((r) => setImmediate(r)); // MemoryLog answers in microtasks: let timers run
      }
    })();
    await until(() => committed > 3);
    let resends = 0;
    log.beforeConditional = async (data) => {
      if (kindOf(data) !== "command") return;
      resends += 1;
      // The replica's own next update lands first, unless it holds back for this re-send.
      const before = committed;
      const end = Date.now() + 200;
      while (committed === before && Date.now() < end) await sleep(2);
    };
    log.unanswered = 1;
    const result = await victim
      .updateUnconditionally("increment", { by: 1000 }, { outcomeTimeoutMs: 4_000 })
      .then(
        (r) => r.revision,
        (e: Error) => e,
      );
    running = false;
    await loop;
    expect(result).toBeTypeOf("number");
    // Its own replica's updates begun after it wait for it (the writer's invariant 8), so it loses
    // at most one race, to an update already in flight (before: it lost them until it announced
    // itself with an intent).
    expect(resends).toBeGreaterThanOrEqual(1);
    expect(resends).toBeLessThanOrEqual(2);
    const commands = (await entries(log)).filter((e) => e.kind === "command");
    expect(commands).toHaveLength(1);
    await victim.synced();
    expect(victim.state.count).toBe(1000 + committed);
  });

  it("many commands of one replica re-sent together commit, each once", async () => {
    const { log, victim, loader } = await victimAndLoader();
    let running = true;
    let loaded = 0;
    const load = (async () => {
      while (running) {
        await loader.updateUnconditionally("increment", { by: 1 });
        loaded += 1;
      }
    })();
    log.setAppendDelay(2); // sends take a while: look-ups end while other re-sends travel
    log.readDelayMs = 5;
    log.unanswered = 20;
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () =>
        victim.updateUnconditionally("increment", { by: 1000 }, { outcomeTimeoutMs: 5_000 }).then(
          () => "ok",
          (e: StateSyncError) => e.code,
        ),
      ),
    );
    running = false;
    await load;
    expect(outcomes).toEqual(Array.from({ length: 20 }, () => "ok"));
    // Commands in flight together share entries (format 4): each command stored once.
    const mine = (await entries(log)).flatMap((e) =>
      e.client !== "victim"
        ? []
        : e.kind === "command"
          ? [e]
          : e.kind === "commands"
            ? e.commands
            : [],
    );
    expect(mine).toHaveLength(20);
    await victim.synced();
    expect(victim.state.count).toBe(20 * 1000 + loaded);
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
