import { MemoryLog, StateSyncError } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { codeOf, late, open } from "./fixtures.js";

describe("outcomeTimeoutMs and signal bound the attempt in flight (issue 10, case 6)", () => {
  it("an update on a log that does not answer ends at its outcome timeout, not the log's", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    log.setAppendDelay(2_000); // a server that holds the append for 2 s
    const update = a.update("increment", { by: 1 }, { outcomeTimeoutMs: 100 });
    const first = await Promise.race([codeOf(update), late(1_000)]);
    expect(first).toBe("UNKNOWN_OUTCOME");
    await expect(update).rejects.toThrow(/within 100 ms/);
    log.setAppendDelay(0);
    await a.close();
  });

  it("a signal that aborts while the attempt is in flight ends it at once, as UNKNOWN_OUTCOME", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    log.setAppendDelay(2_000);
    const signal = AbortSignal.timeout(100);
    const update = a.updateUnconditionally("increment", { by: 1 }, { signal });
    const first = await Promise.race([codeOf(update), late(1_000)]);
    expect(first).toBe("UNKNOWN_OUTCOME");
    await expect(update).rejects.toThrow(/aborted/);
    // The slow log still stores it: the outcome was indeed unknown, not a failure.
    await new Promise((r) => setTimeout(r, 2_100));
    expect(await a.fetchUpdates()).toBe(2);
    expect(a.state.count).toBe(1);
    log.setAppendDelay(0);
    await a.close();
  });
});

describe("an update that never reached the log says how long it waited (issue 12)", () => {
  it("rejects UNAVAILABLE naming the whole wait and the attempts, the last error as its cause", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    // Unreachable with the connection not (yet) known lost: every send fails, nothing is sent.
    log.appendConditional = () =>
      Promise.reject(
        new StateSyncError("UNAVAILABLE", "the memory log is offline", {
          details: { notSent: true },
        }),
      );
    const started = Date.now();
    const error = (await a
      .update("increment", { by: 1 }, { outcomeTimeoutMs: 300 })
      .catch((e: unknown) => e)) as StateSyncError;
    const elapsed = Date.now() - started;
    expect(error.code).toBe("UNAVAILABLE");
    const waited = error.details.waitedMs as number;
    const attempts = error.details.attempts as number;
    // The figure is the wait this update went through, not one attempt's limit.
    expect(waited).toBeGreaterThanOrEqual(300);
    expect(waited).toBeLessThanOrEqual(elapsed);
    expect(attempts).toBeGreaterThan(1);
    expect(error.message).toContain(`unreachable for ${waited} ms (${attempts} attempts`);
    expect((error.cause as StateSyncError).message).toBe("the memory log is offline");
    expect(error.details.notSent).toBe(true);
    // The same details as an update that timed out waiting in the queue (a trial, stop 27).
    expect(error.details).toMatchObject({ timedOut: true, outcomeTimeoutMs: 300 });
    expect(await a.fetchUpdates()).toBe(1); // nothing was appended
    await a.close();
  });

  it("with the connection lost, sends nothing and says so at the deadline", async () => {
    // The revision an update is conditional on is unchecked until the log, back, says it still
    // holds it (log-went-back.test.ts): nothing is sent meanwhile.
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    log.setOffline(true);
    const started = Date.now();
    const error = (await a
      .update("increment", { by: 1 }, { outcomeTimeoutMs: 300 })
      .catch((e: unknown) => e)) as StateSyncError;
    expect(error.code).toBe("UNAVAILABLE");
    expect(error.details).toMatchObject({
      notSent: true,
      attempts: 0,
      timedOut: true,
      outcomeTimeoutMs: 300,
    });
    expect(error.details.waitedMs as number).toBeGreaterThanOrEqual(300);
    expect(error.details.waitedMs as number).toBeLessThanOrEqual(Date.now() - started);
    expect(error.message).toMatch(/unreachable for \d+ ms \(the connection was lost/);
    log.setOffline(false);
    expect(await a.fetchUpdates()).toBe(1); // nothing was appended
    await a.close();
  });

  it("by a replica that never reached the log: the same details (notSent, timedOut, waitedMs)", async () => {
    // A fresh-eyes trial: opened offline (a server never reached), an update rejected after its
    // outcomeTimeoutMs with UNAVAILABLE and empty details, unlike one of a replica that had opened.
    const log = new MemoryLog();
    log.setOffline(true);
    const a = await open(log, { compaction: false, waitFor: "restored" });
    const update = a.update("increment", { by: 1 }, { outcomeTimeoutMs: 300 });
    const unconditional = a.updateUnconditionally(
      "increment",
      { by: 1 },
      { outcomeTimeoutMs: 300 },
    );
    // Both held at once: the second may reject while the first is awaited (an unhandled
    // rejection in a CI run).
    const errors = await Promise.all([update, unconditional].map((p) => p.catch((e) => e)));
    for (const error of errors as StateSyncError[]) {
      expect(error.code).toBe("UNAVAILABLE");
      expect(error.details).toMatchObject({ notSent: true, timedOut: true, outcomeTimeoutMs: 300 });
      expect(error.details.waitedMs as number).toBeGreaterThanOrEqual(300);
    }
    log.setOffline(false);
    await a.synced();
    expect(a.revision).toBe(1); // the genesis entry only: nothing was appended
    await a.close();
  });
});
