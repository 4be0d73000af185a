import { MemoryLog, MemorySnapshotStore, type SnapshotStore } from "@statesync/core";
import { expect, it } from "vitest";
import { open } from "./fixtures.js";

/**
 * A snapshot store that never answers while held: an IndexedDB read or write behind another
 * tab's transaction that never finishes (a frozen or hung tab in the middle of a save).
 */
function heldStore(inner: SnapshotStore): SnapshotStore & { held: boolean } {
  const never = new Promise<never>(() => undefined);
  const store = {
    held: true,
    load: (key: string) => (store.held ? never : inner.load(key)),
    save: (key: string, r: Parameters<SnapshotStore["save"]>[1]) =>
      store.held ? never : inner.save(key, r),
    delete: (key: string) => (store.held ? never : inner.delete(key)),
  };
  return store;
}

it("a snapshot store that never answers keeps neither open nor close waiting for ever", async () => {
  const log = new MemoryLog();
  const inner = new MemorySnapshotStore();
  const w = await open(log, { snapshots: inner });
  for (let i = 0; i < 5; i++) await w.update("increment", { by: 1 });
  await w.close(); // a good snapshot at revision 6
  const store = heldStore(inner);
  const a = await open(log, { snapshots: store });
  // Opened from the log, said why, and the stored snapshot is still there.
  expect(a.state.count).toBe(5);
  expect(a.stats.snapshotsRestored).toBe(0);
  expect(a.errors.map((e) => e.code)).toEqual(["SNAPSHOT_FAILED"]);
  expect(a.errors[0]!.message).toMatch(/did not answer/);
  await a.update("increment", { by: 1 });
  await a.close(); // its save never finishes
  const b = await open(log, { snapshots: inner });
  expect(b.stats.snapshotsRestored).toBe(1);
  expect(b.stats.entriesFetched).toBe(1); // the snapshot at 6 is still there
  expect(b.state.count).toBe(6);
  await b.close();
}, 40_000);
