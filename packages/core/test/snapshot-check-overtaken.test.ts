import { describe, expect, it } from "vitest";
import { MemoryLog, MemorySnapshotStore, type LogEntry } from "@statesync/core";
import { open } from "./fixtures.js";

/**
 * A restored snapshot is checked against the log: its entry read back at its revision. A
 * compaction by another replica between the check's `info()` and that read removed the entry,
 * and the check, judging by the `info()` from before, took it for an entry missing from the
 * middle of the log: it discarded a good snapshot (`CORRUPT_SNAPSHOT`), and the replica went
 * back from its revision to 0 (CI's chaos check, seed 5 on nats-server 2.10: "r1 went back from
 * revision 32 to 0"; the same kind as the openings a compaction overtook, stop 45).
 */
class CompactingLog extends MemoryLog {
  /** Runs once, before the next `entryAt` answers. */
  beforeEntryAt: (() => Promise<void>) | undefined;
  override async entryAt(revision: number): Promise<LogEntry | undefined> {
    const run = this.beforeEntryAt;
    this.beforeEntryAt = undefined;
    if (run) await run();
    return super.entryAt(revision);
  }
}

describe("a restored snapshot whose entry a compaction removes while it is checked", () => {
  it("is kept: the replica goes on from its revision, nothing discarded", async () => {
    const log = new CompactingLog();
    const snapshots = new MemorySnapshotStore();
    const a = await open(log, { snapshots, compaction: false });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    await a.saveSnapshot();
    const saved = a.revision;
    await a.close();
    const b = await open(log.handle(), { compaction: false });
    for (let i = 0; i < 3; i++) await b.update("increment", { by: 1 });
    log.beforeEntryAt = async () => {
      await b.compact(); // a snapshot entry past `saved`, everything before it truncated
    };
    const again = await open(log, { snapshots, compaction: false, waitFor: "restored" });
    const revisions: number[] = [again.revision];
    again.subscribe((_, revision) => revisions.push(revision));
    await again.synced();
    expect(again.errors.map((e) => e.code)).toEqual([]);
    expect(revisions[0]).toBe(saved);
    expect(revisions.every((r, i) => i === 0 || r >= revisions[i - 1]!)).toBe(true);
    expect(again.state.count).toBe(6);
    await Promise.all([again.close(), b.close()]);
  });
});
