import { describe, expect, it } from "vitest";
import { createSynchronizer, MemoryLog, type LogEntry, type StateSyncError } from "@statesync/core";
import { riskyModel as model } from "./fixtures.js";

/**
 * An unconditional command's caller learns what its replica did with the entry. A replica that
 * was behind and reached a later state by a snapshot entry another replica's compaction wrote
 * (the entry itself truncated) never applied the entry, so it does not know whether the command
 * failed: it answers `applied: false`, not success (a new user's trial: two calls whose recipe
 * threw resolved `{ revision }` after such a jump).
 */

/** A handle whose reads wait until {@link open} is called (a replica that fell behind). */
class GatedLog extends MemoryLog {
  private gate: Promise<void> = Promise.resolve();
  private release: () => void = () => undefined;
  hold(): void {
    this.gate = new Promise((r) => (this.release = r));
  }
  open(): void {
    this.release();
  }
  override async *read(from: number, to: number): AsyncIterable<LogEntry> {
    await this.gate;
    yield* super.read(from, to);
  }
}

describe("an unconditional command whose entry the replica passed over", () => {
  it("resolves applied: false when the replica jumped onto a later snapshot entry", async () => {
    const log = new MemoryLog();
    const other = await createSynchronizer({
      log: log.handle(),
      model,
      snapshots: false,
      compaction: false,
    });
    const gated = new GatedLog({}, (log as unknown as { core: never }).core);
    const behind = await createSynchronizer({
      log: gated,
      model,
      live: false,
      snapshots: false,
      compaction: false,
    });
    behind.on("error", () => {});
    other.on("error", () => {});
    gated.hold();
    const call = behind.updateUnconditionally("bump", { n: 2 }); // its recipe throws
    const settled = call.then(
      (r) => ({ ok: r }),
      (e: StateSyncError) => ({ error: e.code }),
    );
    // The other replica applies it (a no-op), compacts and truncates the log before its snapshot.
    while (other.revision < 2) await other.fetchUpdates();
    await other.compact();
    gated.open();
    const outcome = await settled;
    expect(behind.revision).toBeGreaterThanOrEqual(3);
    expect(outcome).toEqual({ ok: { revision: 2, applied: false } });
    await behind.close();
    await other.close();
  });
});
