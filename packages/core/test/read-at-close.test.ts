import { describe, expect, it } from "vitest";
import { MemoryLog, type LogEntry } from "@statesync/core";
import { codeOf, open, until } from "./fixtures.js";

/**
 * Regression test (fresh-eyes trial): `history()` and `stateAt()` in flight when `close()` was
 * called went on reading; on JetStream they ended seconds later with a misleading
 * `CONNECTION_CLOSED` (the replica had closed its own connection under them) or `UNAVAILABLE`,
 * although docs/guarantees.md promises `CLOSED` for every call that would read the log after
 * `close()`. They now reject `CLOSED` at once, and their read stops at its next entry (on a log
 * the replica does not own, which it never closes). The JetStream side (the log's close ends a
 * pull in flight) is `packages/node/test/read-at-close.test.ts`.
 */

/**
 * A MemoryLog whose range reads, once `hold()` is called, wait before each entry until
 * `release()`; counts the reads waiting, the entries they handed out and the reads that ended.
 */
function holdingLog() {
  const log = new MemoryLog();
  const read = log.read.bind(log);
  const counts = { waiting: 0, delivered: 0, ended: 0 };
  let held = false;
  let release: () => void = () => undefined;
  let released = Promise.resolve();
  log.read = (from: number, to: number): AsyncIterable<LogEntry> =>
    (async function* () {
      try {
        for await (const entry of read(from, to)) {
          if (held) {
            counts.waiting += 1;
            await released;
            counts.waiting -= 1;
          }
          counts.delivered += 1;
          yield entry;
        }
      } finally {
        counts.ended += 1;
      }
    })();
  return Object.assign(log, {
    counts,
    hold() {
      held = true;
      released = new Promise<void>((r) => (release = r));
    },
    release: () => release(),
  });
}

describe("history() and stateAt() in flight at close()", () => {
  it("reject CLOSED at once, and their reads stop at the next entry", async () => {
    const log = holdingLog();
    const sync = await open(log, { live: false });
    for (let i = 0; i < 9; i++) await sync.updateUnconditionally("increment", { by: 1 });
    expect(sync.revision).toBe(10);
    log.hold();
    const before = { ...log.counts };
    const history = codeOf(sync.history());
    const state = codeOf(sync.stateAt(10));
    await until(() => log.counts.waiting === 2); // both reads wait on their first entry
    await sync.close();
    log.release(); // the log answers again: what the reads get now comes too late
    expect(await Promise.all([history, state])).toEqual(["CLOSED", "CLOSED"]);
    await until(() => log.counts.ended === before.ended + 2);
    // Each read handed out the entry it waited on and stopped there: 1 of 10 each.
    expect(log.counts.delivered - before.delivered).toBe(2);
  });

  it("a stalled replica's too: CLOSED, not its stall error", async () => {
    const log = holdingLog();
    const sync = await open(log);
    log.injectRaw(JSON.stringify({ v: 5, kind: "from-the-future" }));
    await until(() => sync.status === "stalled");
    log.hold();
    const history = codeOf(sync.history());
    const state = codeOf(sync.stateAt(1));
    await until(() => log.counts.waiting === 2);
    await sync.close();
    log.release();
    expect(await Promise.all([history, state])).toEqual(["CLOSED", "CLOSED"]);
  });

  it("after close(), both reject CLOSED without reading", async () => {
    const log = holdingLog();
    const sync = await open(log);
    await sync.close();
    const before = log.counts.delivered;
    expect(await codeOf(sync.history())).toBe("CLOSED");
    expect(await codeOf(sync.stateAt(1))).toBe("CLOSED");
    expect(log.counts.delivered).toBe(before);
  });
});
