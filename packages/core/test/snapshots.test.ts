import { describe, expect, it } from "vitest";
import { MemoryLog, MemorySnapshotStore } from "@statesync/core";
import { codeOf, open, until } from "./fixtures.js";

describe("snapshots on MemoryLog", () => {
  async function history(log: MemoryLog, n: number) {
    const w = await open(log);
    for (let i = 0; i < n; i++) await w.update("increment", { by: 1 });
    return w;
  }

  it("restarts from a snapshot and fetches only the entries after it", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const w = await history(log, 10);
    const a = await open(log, { snapshots: store });
    expect(a.stats.entriesFetched).toBe(11);
    await a.close(); // writes the snapshot at revision 11
    for (let i = 0; i < 3; i++) await w.update("increment", { by: 1 });
    const b = await open(log, { snapshots: store });
    expect(b.stats.snapshotsRestored).toBe(1);
    expect(b.stats.entriesFetched).toBe(3);
    expect(b.state.count).toBe(13);
    expect(b.revision).toBe(14);
    await Promise.all([b.close(), w.close()]);
  });

  it("restarts from a snapshot whose last entry was its own update", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const a = await open(log, { snapshots: store });
    await a.update("increment", { by: 4 });
    await a.close();
    const b = await open(log, { snapshots: store });
    expect(b.errors).toEqual([]);
    expect(b.stats.snapshotsRestored).toBe(1);
    expect(b.stats.entriesFetched).toBe(0);
    expect(b.state.count).toBe(4);
    await b.close();
  });

  it("saves every snapshotEvery entries", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const w = await open(log, { snapshots: store });
    for (let i = 0; i < 250; i++) await w.updateUnconditionally("increment", { by: 1 });
    await w.waitFor(251);
    await until(() => w.stats.snapshotsSaved >= 2);
    const saved = await store.load("counter");
    expect(saved!.revision).toBeGreaterThanOrEqual(200);
    await w.close();
  });

  it("resolves with the stored state right away with waitFor: restored, then catches up", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const w = await history(log, 2);
    const a = await open(log, { snapshots: store });
    await a.close();
    await w.update("increment", { by: 1 });
    log.setOffline(true);
    const b = await open(log, { snapshots: store, waitFor: "restored" });
    expect(b.state.count).toBe(2);
    expect(b.status).not.toBe("live");
    log.setOffline(false);
    await until(() => b.state.count === 3);
    expect(b.status).toBe("live");
    await Promise.all([b.close(), w.close()]);
  });

  it("starts offline from the stored state with waitFor: synced, and catches up later", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const w = await history(log, 4);
    const a = await open(log, { snapshots: store });
    await a.close();
    log.setOffline(true);
    const b = await open(log, { snapshots: store });
    expect(b.status).toBe("offline");
    expect(b.state.count).toBe(4);
    log.setOffline(false);
    await w.update("increment", { by: 1 });
    await until(() => b.state.count === 5);
    expect(b.status).toBe("live");
    await Promise.all([b.close(), w.close()]);
  });

  it("reports a store that cannot save as SNAPSHOT_FAILED and keeps going", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    store.save = () => Promise.reject(new Error("EACCES: permission denied"));
    const a = await open(log, { snapshots: store });
    const errors: string[] = [];
    a.on("error", (e) => errors.push(e.code));
    await a.update("increment", { by: 1 });
    const err = await a.saveSnapshot().catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe("SNAPSHOT_FAILED");
    expect(String((err as Error).cause)).toMatch(/EACCES/);
    expect(errors).toContain("SNAPSHOT_FAILED");
    expect((await a.update("increment", { by: 1 })).state.count).toBe(2);
    await a.close(); // the failing save on close is reported, not thrown
  });

  it("discards a corrupted snapshot with a warning and rebuilds from the log", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const w = await history(log, 3);
    const a = await open(log, { snapshots: store });
    await a.close();
    store.corrupt("counter");
    const b = await open(log, { snapshots: store });
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(b.stats.snapshotsRestored).toBe(0);
    expect(b.stats.entriesFetched).toBe(4);
    expect(b.state.count).toBe(3);
    await Promise.all([b.close(), w.close()]);
  });

  // A new user's trial: a snapshot file that was a directory read "discarding the local
  // snapshot", and the directory stayed (as documented). The report now follows the deletion and
  // says what happened to the snapshot.
  it("says it discarded a snapshot it refuses only once the store deleted it; else that it ignores it", async () => {
    const log = new MemoryLog();
    const w = await history(log, 3);
    for (const deletes of [true, false]) {
      const store = new MemorySnapshotStore();
      const a = await open(log, { snapshots: store });
      await a.close();
      store.corrupt("counter");
      if (!deletes) store.delete = () => Promise.reject(new Error("the disk said no"));
      const b = await open(log, { snapshots: store });
      expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
      const [report] = b.errors;
      if (deletes) {
        expect(report!.message).toMatch(/^discarded the local snapshot: /);
        expect(report!.details).toMatchObject({ deleted: true });
        await expect(store.load("counter")).resolves.toBeUndefined();
      } else {
        expect(report!.message).toMatch(
          /^ignoring the local snapshot: .*; it is left in place: deleting it failed \(the disk said no\)$/,
        );
        expect(report!.details).toMatchObject({ deleted: false, kept: true });
        await expect(store.load("counter")).rejects.toMatchObject({ code: "CORRUPT_SNAPSHOT" });
      }
      expect(b.state.count).toBe(3);
      await b.close();
    }
    await w.close();
  });

  it("discards a snapshot of a recreated log", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const w = await history(log, 3);
    await w.close();
    const a = await open(log, { snapshots: store });
    await a.close();
    log.recreate();
    const b = await open(log, { snapshots: store });
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(b.errors[0]!.message).toMatch(/recreated/);
    expect(b.stats.snapshotsRestored).toBe(0);
    expect(b.state.count).toBe(0);
    expect(b.revision).toBe(1);
    await b.close();
  });

  it("discards a snapshot ahead of the log, or naming another entry", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const w = await history(log, 3);
    const a = await open(log, { snapshots: store });
    await a.close();
    const saved = (await store.load("counter"))!;
    await store.save("counter", { ...saved, revision: 99 });
    const b = await open(log, { snapshots: store });
    expect(b.revision).toBe(4);
    expect(b.state.count).toBe(3);
    await b.close();
    const again = (await store.load("counter"))!;
    await store.delete("counter");
    await store.save("counter", {
      ...again,
      messageId: "not-the-real-one",
      state: { count: 77, items: [], log: [] },
    });
    const c = await open(log, { snapshots: store });
    expect(c.state.count).toBe(3);
    await Promise.all([c.close(), w.close()]);
  });

  it("discards a snapshot whose state fails the schema", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const w = await history(log, 2);
    const a = await open(log, { snapshots: store });
    await a.close();
    const saved = (await store.load("counter"))!;
    await store.save("counter", { ...saved, state: { count: "two" } });
    const b = await open(log, { snapshots: store });
    expect(b.state.count).toBe(2);
    expect(b.stats.snapshotsRestored).toBe(0);
    await Promise.all([b.close(), w.close()]);
  });
});

describe("a purge of the whole log keeps a local snapshot of it (issue 10, case 4)", () => {
  it("uses the snapshot when nothing after its revision is missing", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const a = await open(log, { snapshots: store });
    for (let i = 0; i < 6; i++) await a.update("increment", { by: 1 });
    await a.close(); // snapshot at revision 7
    await log.truncateBefore(8); // an operator purges every entry: first 0, latest 7
    const b = await open(log, { snapshots: store });
    expect(b.errors.map((e) => e.code)).toEqual([]);
    expect(b.status).toBe("live");
    expect(b.revision).toBe(7);
    expect(b.state.count).toBe(6);
    expect(await store.load("counter")).toBeDefined();
    await b.update("increment", { by: 1 });
    expect(b.state.count).toBe(7);
    await b.close();
  });

  // Stop 25's trial (HIGH): a replica without a snapshot that opened the purged log first
  // started it again from the initial state, and the snapshot's holder then took that state.
  it("the snapshot's holder writes its state back over a fresh replica's restart of the log", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const a = await open(log, { snapshots: store });
    for (let i = 0; i < 6; i++) await a.update("increment", { by: 1 });
    await a.close(); // snapshot at revision 7
    await log.truncateBefore(8);
    const fresh = await open(log, { compaction: false }); // re-anchors: the initial state
    expect(fresh.state.count).toBe(0);
    const b = await open(log, { snapshots: store });
    await b.fetchUpdates();
    await until(() => b.revision === 9 && b.state.count === 6);
    await fresh.fetchUpdates();
    expect(fresh.state.count).toBe(6);
    expect(fresh.revision).toBe(9);
    expect(b.errors.map((e) => [e.code, e.details.held])).toEqual([["TRUNCATED", true]]);
    await Promise.all([b.close(), fresh.close()]);
  });
});

describe("a log replaced under a live replica (issue 10, case 3)", () => {
  it("stalls the replica with LOG_REPLACED; it never appends to the new log", async () => {
    const admin = new MemoryLog();
    const a = await open(admin.handle(), { clientId: "a", compaction: false });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    admin.recreate(); // deleted and created again: a new incarnation
    const b = await open(admin.handle(), { clientId: "b", compaction: false });
    for (let i = 0; i < 3; i++) await b.update("increment", { by: 10 });
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("LOG_REPLACED");
    expect(a.status).toBe("stalled");
    expect(a.state.count).toBe(3);
    await b.fetchUpdates();
    expect(b.state.count).toBe(30);
    expect(b.revision).toBe(4);
    await Promise.all([a.close(), b.close()]);
  });
});
