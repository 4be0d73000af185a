import { MemoryLog, StateSyncError, type LogEntry } from "@statesync/core";
import { afterEach, describe, expect, it } from "vitest";
import { open } from "./fixtures.js";

/** A log whose next `failReads` range reads and `failInfos` infos fail `UNAVAILABLE`. */
class FlakyReads extends MemoryLog {
  failReads = 0;
  failInfos = 0;
  reads = 0;
  override async info() {
    if (this.failInfos > 0) {
      this.failInfos -= 1;
      throw new StateSyncError("UNAVAILABLE", "info: injected failure (a frozen server)");
    }
    return super.info();
  }
  override async *read(fromRevision: number, toRevision: number): AsyncIterable<LogEntry> {
    this.reads += 1;
    if (this.failReads > 0) {
      this.failReads -= 1;
      throw new StateSyncError("UNAVAILABLE", "read: injected failure (a pull cut)");
    }
    yield* super.read(fromRevision, toRevision);
  }
}

/**
 * A loaded trial (3 replicas, 4,500 updates of 150 KB, `outcomeTimeoutMs` 15 min, connections
 * cut as slow consumers) saw conditional updates reject `UNAVAILABLE` the first time the read
 * after a conflict failed, minutes before their `outcomeTimeoutMs`. The catch-up is tried again
 * until the update's limits end; outcomes only.
 */
describe("the catch-up after a conflict, when a read fails", () => {
  const opened: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close();
  });

  it("tries the read again and commits the update", async () => {
    const log = new FlakyReads();
    const a = await open(log, { live: false, clientId: "a" });
    const b = await open(log.handle(), { live: false, clientId: "b" });
    opened.push(a, b);
    await b.update("increment", { by: 10 }); // a is now behind: its next append conflicts
    log.failReads = 3;
    const reads = log.reads;
    const result = await a.update("increment", { by: 1 }, { outcomeTimeoutMs: 60_000 });
    expect(result.state.count).toBe(11);
    expect(log.failReads).toBe(0);
    expect(log.reads - reads).toBeGreaterThan(3);
    expect(a.errors.map((e) => e.code).every((c) => c === "UNAVAILABLE")).toBe(true);
  });

  it("still ends at the update's outcomeTimeoutMs when the reads keep failing, nothing appended", async () => {
    const log = new FlakyReads();
    const a = await open(log, { live: false, clientId: "a" });
    const b = await open(log.handle(), { live: false, clientId: "b" });
    opened.push(a, b);
    await b.update("increment", { by: 10 });
    const size = log.size;
    log.failReads = Number.POSITIVE_INFINITY;
    const error = await a.update("increment", { by: 1 }, { outcomeTimeoutMs: 1_000 }).then(
      () => undefined,
      (e: StateSyncError) => e,
    );
    expect(error?.code).toBe("UNAVAILABLE");
    expect(error?.details.notSent).toBe(true);
    expect(log.size).toBe(size);
  });
});

/**
 * A trial (stop 28): a conditional update whose recipe changes nothing asks the log whether it
 * read the latest state; against a frozen server it failed `UNAVAILABLE` after 5 s, against a
 * stopped one at once, with `outcomeTimeoutMs` 40 s, where an update that changes something
 * waited and committed once the server was back.
 */
describe("a no-op update, while the log cannot answer", () => {
  it("asks again until the log answers, within its outcomeTimeoutMs", async () => {
    const log = new FlakyReads();
    const a = await open(log, { live: false, clientId: "a" });
    log.failInfos = 3;
    const result = await a.update(() => undefined, { outcomeTimeoutMs: 60_000 });
    expect(result.revision).toBe(a.revision);
    expect(log.failInfos).toBe(0);
    await a.close();
  });

  it("rejects UNAVAILABLE, nothing appended, at its outcomeTimeoutMs", async () => {
    const log = new FlakyReads();
    const a = await open(log, { live: false, clientId: "a" });
    log.failInfos = Number.POSITIVE_INFINITY;
    const error = await a
      .update(() => undefined, { outcomeTimeoutMs: 500 })
      .then(
        () => undefined,
        (e: StateSyncError) => e,
      );
    expect(error?.code).toBe("UNAVAILABLE");
    expect(error?.details).toMatchObject({ notSent: true, timedOut: true, outcomeTimeoutMs: 500 });
    log.failInfos = 0;
    await a.close();
  });
});
