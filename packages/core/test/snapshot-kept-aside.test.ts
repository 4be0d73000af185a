import { describe, expect, it } from "vitest";
import { MemoryLog, MemorySnapshotStore, replacedSnapshotKey } from "@statesync/core";
import { open } from "./fixtures.js";

/**
 * A new user's trial: the server lost its store and the stream was created again. The replicas'
 * local snapshots then held the last copy of the state, and each replica deleted its own when it
 * opened ("the log was recreated"), with no way back. Outcome: the snapshot the log no longer
 * agrees with is kept under `<key> (replaced)` (the report says so) before it is discarded, and
 * the replica goes on from the new log as before.
 */
/** A log, and a store holding a replica's snapshot of it after one increment `by`. */
async function snapshotted(by: number) {
  const log = new MemoryLog();
  const store = new MemorySnapshotStore();
  const a = await open(log, { snapshots: store });
  await a.update("increment", { by });
  await a.close();
  return { log, store, saved: (await store.load("counter"))! };
}

describe("a local snapshot whose log lost its history", () => {
  it("is kept aside under <key> (replaced), with its state, when the log was created again", async () => {
    const { log, store, saved: before } = await snapshotted(5);
    expect(before.state).toMatchObject({ count: 5 });

    log.recreate();
    const b = await open(log.handle(), { snapshots: store });
    expect(b.state.count).toBe(0); // the new log's state
    const report = b.errors.find((e) => e.code === "CORRUPT_SNAPSHOT");
    expect(report?.message).toMatch(/recreated.*kept under the store key "counter \(replaced\)"/);
    expect(report?.details).toMatchObject({ keptAs: "counter (replaced)" });
    const kept = await store.load(replacedSnapshotKey("counter"));
    expect(kept).toEqual(before);
    await b.close();
    expect((await store.load("counter"))?.logIdentity).not.toBe(before.logIdentity);
  });

  it("is kept aside when it is ahead of the log (a server restored from an older copy)", async () => {
    const { log, store, saved } = await snapshotted(1);
    // The same log, said to be behind the snapshot: its record claims a later revision.
    await store.delete("counter");
    await store.save("counter", { ...saved, revision: saved.revision + 10 });
    const b = await open(log.handle(), { snapshots: store });
    expect(b.errors.find((e) => e.code === "CORRUPT_SNAPSHOT")?.message).toMatch(
      /ahead of the log.*kept under/,
    );
    expect((await store.load(replacedSnapshotKey("counter")))?.revision).toBe(saved.revision + 10);
    await b.close();
  });

  /**
   * Kept aside twice, both of the same log (two restores from an older copy): the store keeps
   * a higher revision of a log over a lower one, so the second save left the first copy, and
   * the report said the second state was kept while it was gone. Outcome: the latest is kept.
   */
  it("keeps the latest when an earlier copy of the same log is at a higher revision", async () => {
    const { log, store, saved } = await snapshotted(1);
    const ahead = async (by: number, count: number) => {
      await store.delete("counter");
      const state = { count, items: [], log: [] };
      await store.save("counter", { ...saved, revision: saved.revision + by, state });
      const replica = await open(log.handle(), { snapshots: store });
      await replica.close();
      return replica.errors.find((e) => e.code === "CORRUPT_SNAPSHOT");
    };
    await ahead(10, 111);
    const report = await ahead(5, 222);
    expect(report?.details).toMatchObject({ keptAs: "counter (replaced)" });
    expect((await store.load(replacedSnapshotKey("counter")))?.state).toMatchObject({ count: 222 });
  });
});
