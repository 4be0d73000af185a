import { describe, expect, it } from "vitest";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemorySnapshotStore,
  type Model,
  type StateSyncError,
} from "@statesync/core";
import { codeOf, until } from "./fixtures.js";
import { v1, v2 } from "./version-models.js";

async function open<S>(log: MemoryLog, model: Model<S, any>, extra: Record<string, unknown> = {}) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log: log.handle(),
    model,
    compaction: false,
    snapshotKey: "k",
    onError: (e) => errors.push(e),
    ...extra,
  });
  return Object.assign(sync, { errors });
}

/** Appends `n` entries with a version-2 writer that keeps no snapshot. */
async function appendV2(log: MemoryLog, n: number): Promise<void> {
  const other = await open(log, v2, { clientId: "other" });
  for (let i = 0; i < n; i++) await other.update("add", { id: `o${i}` });
  await other.close();
}

/**
 * docs/versions.md, "Local snapshots": an older app (a rollback, a stale tab) sharing the
 * snapshot store and key of a newer one never deletes or replaces the newer one's snapshot, and a
 * replica stopped by the switch saves nothing. Before, a version-1 app refused at open deleted
 * the version-2 snapshot and saved its own (revision 6 at version 1), and the version-2 app then
 * replayed from there.
 */
describe("model versions and the local snapshot", () => {
  it("a version-1 app refused at open keeps the version-2 snapshot; the version-2 app resumes from it", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const a1 = await open(log, v1, { snapshots: store });
    for (let i = 0; i < 5; i++) await a1.update("add", { id: `a${i}` });
    await a1.close();
    const b2 = await open(log, v2, { snapshots: store }); // switches the log at open
    for (let i = 0; i < 5; i++) await b2.update("add", { id: `b${i}` });
    await b2.close();
    const saved = await store.load("k");
    expect(saved).toMatchObject({ modelVersion: 2, revision: 12 });

    const reported: StateSyncError[] = [];
    const old = open(log, v1, {
      snapshots: store,
      onError: (e: StateSyncError) => reported.push(e),
    });
    expect(await codeOf(old)).toBe("MODEL_UPGRADED");
    const kept = reported.find((e) => e.code === "CORRUPT_SNAPSHOT");
    expect(kept?.message).toMatch(/saved by ids v2, which v1 cannot read; it is kept/);
    expect(kept?.details).toMatchObject({ kept: true, modelVersion: 2 });
    expect(await store.load("k")).toEqual(saved);

    await appendV2(log, 3);
    const again = await open(log, v2, { snapshots: store });
    expect(again.stats.snapshotsRestored).toBe(1);
    expect(again.stats.entriesFetched).toBe(3); // only the tail after its own snapshot
    expect(again.revision).toBe(15);
    expect(again.state.ids).toHaveLength(13);
    await again.close();
  });

  it("a version-1 replica stopped by the switch saves nothing: not automatically, on request or at close", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const a1 = await open(log, v1, { snapshots: store, snapshotEvery: 1 });
    await a1.update("add", { id: "a" });
    await a1.saveSnapshot();
    expect((await store.load("k"))?.revision).toBe(2);
    const saves = a1.stats.snapshotsSaved;
    await store.delete("k"); // so that any later save by a1 would show
    await appendV2(log, 2); // switches the log, then two version-2 entries
    await until(() => a1.status === "stalled");
    expect(a1.stallReason?.code).toBe("MODEL_UPGRADED");
    expect(await codeOf(a1.saveSnapshot())).toBe("MODEL_UPGRADED");
    await a1.close();
    expect(await store.load("k")).toBeUndefined();
    expect(a1.stats.snapshotsSaved).toBe(saves);
  });

  it("a snapshot of another model is neither used nor deleted", async () => {
    const store = new MemorySnapshotStore();
    const log = new MemoryLog();
    const other = defineModel({ ...v1, name: "other" });
    const o = await open(log, other, { snapshots: store });
    await o.update("add", { id: "x" });
    await o.close();
    const saved = await store.load("k");
    expect(await codeOf(open(log, v1, { snapshots: store }))).toBe("MODEL_MISMATCH");
    expect(await store.load("k")).toEqual(saved);
  });

  it("a newer version's snapshot of a log since recreated is replaced by a replica standing on the new log", async () => {
    const store = new MemorySnapshotStore();
    const log = new MemoryLog();
    await (await open(log, v1)).close();
    const b2 = await open(log, v2, { snapshots: store });
    await b2.update("add", { id: "b" });
    await b2.close();
    // Rolled back: the stream was created again (another identity) and version 1 runs on it.
    const recreated = new MemoryLog();
    const a1 = await open(recreated, v1, { snapshots: store });
    expect(a1.stats.snapshotsRestored).toBe(0);
    await a1.update("add", { id: "a" });
    await a1.close();
    // No version can use a snapshot of the old log: the key now serves the log that exists.
    expect(await store.load("k")).toMatchObject({ modelVersion: 1, revision: 2 });
    const b2again = await open(recreated, v2, { snapshots: store, upgrade: "manual" });
    expect(b2again.stats).toMatchObject({ snapshotsRestored: 1, entriesFetched: 0 });
    await b2again.close();
  });
});
