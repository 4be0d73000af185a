import { describe, expect, it } from "vitest";
import { MemoryLog, type LogEntry } from "@statesync/core";
import { open } from "./fixtures.js";

/** A MemoryLog whose range reads take a moment (a consumer on a real server), counted. */
class CountingLog extends MemoryLog {
  reads = 0;
  override async *read(fromRevision: number, toRevision: number): AsyncIterable<LogEntry> {
    this.reads += 1;
    await new Promise((resolve) => setTimeout(resolve, 3));
    yield* super.read(fromRevision, toRevision);
  }
}

/**
 * Found by the cold-start benchmark (stop 20): `updateUnconditionally` resolves once this replica
 * applied the entry, so a replica that does not follow reads the log for it. Reads queued behind
 * others still read up to the newest acknowledged entry when their own target was reached: each
 * caller paid a range read of its own (4,491 consumers for 5,000 commands on a real server; the
 * benchmark's writer fell from about 4,900 to 300-490 commands a second). Counted, not timed.
 */
describe("a non-live replica with many unconditional commands in flight", () => {
  it("reads the log in batches, not once per command", async () => {
    const log = new CountingLog();
    log.setAppendDelay(1); // acknowledgements come later, as from a server
    const sync = await open(log, { live: false, compaction: false });
    const before = log.reads;
    const callers = 32;
    const rounds = 8;
    await Promise.all(
      Array.from({ length: callers }, async () => {
        for (let i = 0; i < rounds; i++) await sync.updateUnconditionally("increment", { by: 1 });
      }),
    );
    expect(sync.state.count).toBe(callers * rounds);
    // Each read serves every command acknowledged before it started: a few per round.
    expect(log.reads - before).toBeLessThanOrEqual(rounds * 4);
    await sync.close();
  });
});
