import { describe, expect, it } from "vitest";
import { MemoryLog, MemorySnapshotStore } from "@statesync/core";
import { open, until } from "./fixtures.js";

/**
 * A snapshot restored while the log is unreachable serves reads, but nothing reads or writes the
 * log on top of it before it was checked against the log (invariant 1 of engine/snapshots.ts).
 * Found on CI: a replica that opened `offline` caught up through `synced()` from its snapshot's
 * revision without the check, so a snapshot ahead of the log stayed, and an update made offline
 * on the snapshot of a recreated log was appended on top of the old state.
 */
describe("a snapshot restored offline is checked before the log is read or written", () => {
  async function snapshotAt(log: MemoryLog, store: MemorySnapshotStore, updates: number) {
    const w = await open(log, { snapshots: store });
    for (let i = 0; i < updates; i++) await w.update("increment", { by: 1 });
    await w.close();
    return (await store.load("counter"))!;
  }

  it("synced() after an offline opening discards a snapshot ahead of the log", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const saved = await snapshotAt(log, store, 1);
    await store.save("counter", {
      ...saved,
      revision: 999,
      state: { count: 42, items: [], log: [] },
    });
    log.setOffline(true);
    const b = await open(log, { snapshots: store });
    expect(b.status).toBe("offline");
    expect(b.state.count).toBe(42);
    expect(b.stats.snapshotsRestored).toBe(1);
    log.setOffline(false);
    expect(await b.synced()).toBe(2);
    expect(b.state.count).toBe(1);
    expect(b.stats.snapshotsRestored).toBe(0);
    expect(b.errors.map((e) => e.message)).toEqual([
      expect.stringMatching(/ahead of the log \(revision 999 > 2\)/),
    ]);
    await b.close();
  });

  it("an update made offline on the snapshot of a recreated log applies to the new log's state", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const saved = await snapshotAt(log, store, 3);
    expect(saved.revision).toBe(4);
    log.recreate();
    // The new log reaches the snapshot's revision with other entries: count 30 at revision 4.
    const w = await open(log);
    for (let i = 0; i < 3; i++) await w.update("increment", { by: 10 });
    expect(w.revision).toBe(4);
    log.setOffline(true);
    const b = await open(log, { snapshots: store });
    expect(b.state.count).toBe(3);
    const update = b.update("increment", { by: 1 });
    await new Promise((r) => setTimeout(r, 20));
    log.setOffline(false);
    const { state, revision } = await update;
    expect(state.count).toBe(31);
    expect(revision).toBe(5);
    await until(() => w.revision === 5);
    expect(w.state.count).toBe(31);
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    await Promise.all([b.close(), w.close()]);
  });

  it("a compaction right after the log is back, on the snapshot of a recreated log writes the new log's state", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    await snapshotAt(log, store, 3);
    log.recreate();
    const w = await open(log);
    for (let i = 0; i < 3; i++) await w.update("increment", { by: 10 });
    log.setOffline(true);
    const b = await open(log, { snapshots: store, compaction: false });
    // The compaction's code is loaded on first use: load it now, so that the compaction below
    // runs before the replica's own reconnection (0-100 ms after the log is back).
    const warm = await open(new MemoryLog());
    await warm.compact();
    await warm.close();
    // Back, and compacted before the replica's own reconnection has run.
    log.setOffline(false);
    await b.compact();
    const c = await open(log);
    expect(c.state.count).toBe(30);
    await Promise.all([b.close(), w.close(), c.close()]);
  });
});
