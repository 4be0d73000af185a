import { MemoryLog, StateSyncError } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { codeOf, late, open } from "./fixtures.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as StateSyncError,
  );

/**
 * Starts the writer on an update whose recipe throws: the updates queued in the same tick then
 * wait behind it and go together, in one batch (one entry), as updates queued behind one in
 * flight do.
 */
function batchBehind(a: { update(recipe: () => void): Promise<unknown> }): void {
  void a
    .update(() => {
      throw new Error("only starts the writer");
    })
    .catch(() => undefined);
}

/** A log every send to which fails with nothing sent, until `reachable()` is called. */
function unreachable(log: MemoryLog): { reachable(): void } {
  const append = log.appendConditional.bind(log);
  log.appendConditional = () =>
    Promise.reject(
      new StateSyncError("UNAVAILABLE", "the memory log is unreachable", {
        details: { notSent: true },
      }),
    );
  return { reachable: () => (log.appendConditional = append) };
}

/**
 * Conditional updates queued together share one entry, but each keeps its own
 * `outcomeTimeoutMs` and `signal` (a fresh-eyes trial, stop 27: an update with a 60 s timeout
 * queued behind one with 30 s failed with the other's wait at 30 s; two updates whose signals
 * aborted waited for the 30 s timeout, because a batch of several had no signal at all).
 */
describe("the limits of conditional updates that share an entry", () => {
  it("one past its timeout with nothing sent fails alone; the other commits once the log answers", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    const { reachable } = unreachable(log);
    batchBehind(a);
    const short = a.update("increment", { by: 1 }, { outcomeTimeoutMs: 200 });
    const long = a.update("increment", { by: 10 }, { outcomeTimeoutMs: 20_000 });
    const shortError = await errorOf(short);
    expect(shortError?.code).toBe("UNAVAILABLE");
    expect(shortError?.details.notSent).toBe(true);
    // Its own wait, not another's of the entry (a trial saw one update's figures on another).
    expect(shortError?.details.waitedMs).toBeGreaterThanOrEqual(200);
    expect(shortError?.details.waitedMs).toBeLessThan(20_000);
    reachable();
    const committed = await long; // before: rejected with the short one's error and wait
    expect(committed.revision).toBe(2);
    expect(a.state.count).toBe(10);
    expect(await a.fetchUpdates()).toBe(2); // one entry after the genesis: the long update's
    await a.close();
  });

  it("two that end at the same moment each report their own wait", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    unreachable(log);
    // The first update keeps the writer busy for 350 ms; the two behind it then share an entry.
    const first = a.update("increment", { by: 100 }, { outcomeTimeoutMs: 350 });
    first.catch(() => undefined);
    const longer = a.update("increment", { by: 1 }, { outcomeTimeoutMs: 600 });
    await sleep(300); // queued later, with a shorter timeout: both end about 600 ms from the start
    const shorter = a.update("increment", { by: 10 }, { outcomeTimeoutMs: 300 });
    const [l, s] = await Promise.all([errorOf(longer), errorOf(shorter)]);
    expect([l?.code, s?.code]).toEqual(["UNAVAILABLE", "UNAVAILABLE"]);
    expect(l?.details.waitedMs).toBeGreaterThanOrEqual(600);
    expect(s?.details.waitedMs).toBeGreaterThanOrEqual(300);
    expect(s?.details.waitedMs).toBeLessThan(l?.details.waitedMs as number);
    await a.close();
  });

  it("one aborted with nothing sent fails ABORTED and is not appended with the other", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    const { reachable } = unreachable(log);
    const controller = new AbortController();
    batchBehind(a);
    const aborted = a.update("increment", { by: 1 }, { signal: controller.signal });
    const kept = a.update("increment", { by: 10 });
    await sleep(100);
    controller.abort();
    expect(await codeOf(aborted)).toBe("ABORTED");
    reachable();
    await kept;
    // Before, the abort went unseen and the aborted update committed with the other: 11.
    expect(a.state.count).toBe(10);
    await a.close();
  });

  it("signals that abort while their entry is in flight end both at once, as UNKNOWN_OUTCOME", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    log.setAppendDelay(2_000); // a server that holds the append for 2 s
    batchBehind(a);
    const one = a.update("increment", { by: 1 }, { signal: AbortSignal.timeout(100) });
    const two = a.update("increment", { by: 10 }, { signal: AbortSignal.timeout(100) });
    // Before, both waited for the outcome timeout (30 s).
    expect(await Promise.race([codeOf(Promise.all([one, two])), late(1_500)])).toBe(
      "UNKNOWN_OUTCOME",
    );
    expect((await errorOf(two))?.message).toMatch(/aborted while its outcome was unknown/);
    await sleep(2_100); // the slow log stores the entry: its outcome was indeed unknown
    expect(await a.fetchUpdates()).toBe(2);
    expect(a.state.count).toBe(11);
    log.setAppendDelay(0);
    await a.close();
  });

  it("an update sharing an in-flight entry with one aborted goes on and learns that it committed", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    log.setAppendDelay(2_000);
    batchBehind(a);
    const aborted = a.update("increment", { by: 1 }, { signal: AbortSignal.timeout(100) });
    const other = a.update("increment", { by: 10 });
    expect(await codeOf(aborted)).toBe("UNKNOWN_OUTCOME");
    // Before, `other` failed UNKNOWN_OUTCOME too ("its entry also held an update that was
    // aborted"), though the entry was stored: a trial saw 19 of 20 so fail for one abort.
    const committed = await other;
    expect(committed.revision).toBe(2);
    expect(committed.state.count).toBe(11);
    expect(await a.fetchUpdates()).toBe(2); // stored once, with both updates
    expect(a.state.count).toBe(11);
    log.setAppendDelay(0);
    await a.close();
  });

  it("an update sharing an entry with one that timed out in flight is told the truth when the entry lost its race", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    const b = await open(log, { compaction: false });
    log.setAppendDelay(500);
    batchBehind(a);
    const short = a.update("increment", { by: 1 }, { outcomeTimeoutMs: 200 });
    const other = a.update("increment", { by: 10 });
    await sleep(50); // a's entry is in flight on base 1
    log.setAppendDelay(0);
    await b.update("increment", { by: 100 }); // lands first: a's entry conflicts
    expect(await codeOf(short)).toBe("UNKNOWN_OUTCOME");
    // The entry was not stored: `other` runs again on the new tail, without `short`.
    const committed = await other;
    await a.fetchUpdates();
    expect(a.state.count).toBe(110);
    expect(committed.state.count).toBe(110);
    await Promise.all([a.close(), b.close()]);
  });
});

describe("an abort during the re-sends of an unconditional command", () => {
  it("ends the look-up of the earlier send at once (UNKNOWN_OUTCOME)", async () => {
    const log = new MemoryLog();
    // Not following: its own entry is not read back, so the re-send must look it up.
    const a = await open(log, { compaction: false, live: false });
    log.loseNextAcks(1); // stored, but its answer is lost: the next send looks it up first
    log.info = () => new Promise(() => undefined); // a log that no longer answers
    const controller = new AbortController();
    const command = a.updateUnconditionally("increment", { by: 1 }, { signal: controller.signal });
    await sleep(200);
    controller.abort();
    // Before, the abort waited for the look-up, which here never ends.
    expect(await Promise.race([codeOf(command), late(1_500)])).toBe("UNKNOWN_OUTCOME");
    expect((await errorOf(command))?.message).toMatch(/aborted while its outcome was unknown/);
    await a.close();
  });
});
