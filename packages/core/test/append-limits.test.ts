import { MemoryLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { codeOf, open } from "./fixtures.js";

/** Resolves "late" after `ms`: the loser of a race against a call that should end first. */
const late = (ms: number) => new Promise<string>((r) => setTimeout(() => r("late"), ms));

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
