import {
  MemoryLog,
  MemoryPendingStore,
  MemorySnapshotStore,
  type PendingRecord,
  type StateSyncError,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { until } from "../fixtures.js";
import { board, entries, openQueued, stored } from "./fixtures.js";

/**
 * docs/offline.md, "One log": a pending update is bound to the log it was queued for (the
 * identity a local snapshot is checked by) and pushed into that log only. Updates queued for a
 * log that was deleted and created again are set aside: not pushed, not shown, kept stored, one
 * `LOG_REPLACED` event, until the app calls `rebindPending()`, `discard(id)` or `clearPending()`.
 * Before, the replica discarded its snapshot ("the log was recreated") and drained the queue
 * into the new log.
 */
const OWNER = "device-1";

/** Waits for the `LOG_REPLACED` event of updates set aside and returns it. */
async function setAside(sync: { errors: StateSyncError[] }): Promise<StateSyncError> {
  const find = () => sync.errors.find((e) => e.code === "LOG_REPLACED");
  await until(() => find() !== undefined);
  return find()!;
}

/** Entries of `log` that carry queued updates. */
async function queuedEntries(log: MemoryLog) {
  return (await entries(log)).filter((e) => e.origin !== undefined);
}

/** A replica live on `log` queues two updates while the log is unreachable, and closes. */
async function queueOffline(
  log: MemoryLog,
  store: MemoryPendingStore,
  snapshots?: MemorySnapshotStore,
) {
  const a = await openQueued(log, store, snapshots ? { snapshots } : {});
  await a.update("add", { card: "seed" });
  log.setOffline(true);
  await until(() => a.status !== "live");
  const first = a.update("add", { card: "q1" });
  const second = a.updateUnconditionally("bump", {});
  const ids = [(await first.queued).id!, (await second.queued).id!];
  await a.close();
  await Promise.allSettled([first, second]);
  log.setOffline(false);
  return ids;
}

describe("pending updates of another log", () => {
  it("are set aside on a log deleted and created again: not pushed, kept stored, one LOG_REPLACED event", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const snapshots = new MemorySnapshotStore();
    const ids = await queueOffline(log, store, snapshots);
    const old = (await stored(store))[0]!.logIdentity;
    log.recreate();

    const b = await openQueued(log.handle(), store, { snapshots });
    const event = await setAside(b);
    expect(event.details).toMatchObject({ otherLog: true, count: 2, ids, queuedFor: [old] });
    expect(b.status).toBe("live"); // not a stall: the replica goes on with its log
    expect(b.stallReason).toBeUndefined();
    expect(b.pending.map((u) => [u.id, u.command, u.otherLog])).toEqual([
      [ids[0], "add", true],
      [ids[1], "bump", true],
    ]);
    expect(b.pendingCount).toBe(2);
    expect(b.optimisticState).toEqual(board.initial); // not shown on this log's state
    await expect(b.flush()).rejects.toMatchObject({ code: "LOG_REPLACED" });
    // This log's own updates go through meanwhile.
    await b.update("add", { card: "new" });
    expect(b.state).toEqual({ cards: ["new"], n: 0 });
    expect(await queuedEntries(log)).toHaveLength(1);
    await b.close();
    const kept = await stored(store);
    expect(typeof old).toBe("string");
    expect(kept.map((r) => [r.seq, r.logIdentity])).toEqual([
      [ids[0], old],
      [ids[1], old],
    ]);

    // Another open says so again; the app pushes them into this log on purpose.
    const c = await openQueued(log.handle(), store, { snapshots });
    await setAside(c);
    expect(await c.rebindPending()).toBe(2);
    await c.flush();
    expect(c.state).toEqual({ cards: ["new", "q1"], n: 1 });
    expect(c.pending).toEqual([]);
    expect(await queuedEntries(log)).toHaveLength(3); // each once
    await c.close();
    expect(await stored(store)).toEqual([]);
  });

  it("discard(id) and clearPending() remove updates set aside, records included", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const ids = await queueOffline(log, store);
    log.recreate();
    const b = await openQueued(log.handle(), store);
    await setAside(b);
    expect(await b.discard(ids[0]!)).toBe(true);
    expect(b.pending.map((u) => u.id)).toEqual([ids[1]]);
    expect(await b.clearPending()).toBe(1);
    expect(b.pendingCount).toBe(0);
    await b.flush(); // empty
    await b.close();
    expect(await stored(store)).toEqual([]);
    expect(await queuedEntries(log)).toEqual([]);
  });

  it("updates made on a restored snapshot of the old log are set aside; later ones commit, and a rebind commits the first ones too", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const snapshots = new MemorySnapshotStore();
    const a = await openQueued(log, store, { snapshots });
    await a.update("add", { card: "seed" });
    await a.close();
    log.recreate();
    log.setOffline(true);
    const b = await openQueued(log.handle(), store, { snapshots });
    expect(b.state.cards).toEqual(["seed"]); // the snapshot of the old log, offline
    const u1 = b.update("add", { card: "u1" });
    const u2 = b.update("add", { card: "u2" });
    await u2.queued;
    log.setOffline(false);
    await expect(u1).rejects.toMatchObject({ code: "LOG_REPLACED", details: { otherLog: true } });
    await expect(u2).rejects.toMatchObject({ code: "LOG_REPLACED" });
    await b.update("add", { card: "u3" }); // queued after the check: this log's
    expect(b.state.cards).toEqual(["u3"]);
    expect(await b.rebindPending()).toBe(2);
    await b.flush();
    // Not taken for applied: u3 was queued under another origin than u1 and u2.
    expect(b.state.cards).toEqual(["u3", "u1", "u2"]);
    const origins = (await queuedEntries(log)).map((e) => e.origin![0]);
    expect(origins).toHaveLength(2);
    expect(new Set(origins).size).toBe(2);
    await b.close();
  });

  it("updates queued before any log was known bind to the first log found, and are pushed once", async () => {
    const log = new MemoryLog();
    log.setOffline(true);
    const store = new MemoryPendingStore();
    const a = await openQueued(log, store); // no snapshot, never reached the log
    const p = a.update("add", { card: "x" });
    await p.queued;
    expect((await p.queued).id).toBe(a.pending[0]!.id);
    expect(a.pending[0]!.logIdentity).toBeUndefined();
    log.setOffline(false);
    await p;
    await a.flush();
    expect(a.state.cards).toEqual(["x"]);
    expect(await queuedEntries(log)).toHaveLength(1);
    await a.close();
  });

  describe("records of older SDKs, without a log identity", () => {
    /** A record as an SDK before log identities stored it. */
    const oldRecord = (seq: number, card: string): PendingRecord => ({
      format: 1,
      seq,
      kind: "update",
      name: "add",
      args: { card },
      queuedAt: Date.now(),
      mv: 1,
    });

    async function putOld(store: MemoryPendingStore, ...records: PendingRecord[]) {
      const q = await store.open("board", OWNER);
      for (const r of records) await q.put(r);
      await q.close();
    }

    it("are pushed once into the log of the local snapshot (the common case)", async () => {
      const log = new MemoryLog();
      const store = new MemoryPendingStore();
      const snapshots = new MemorySnapshotStore();
      const a = await openQueued(log, store, { snapshots });
      await a.update("add", { card: "seed" });
      await a.close();
      await putOld(store, oldRecord(1, "o1"), oldRecord(2, "o2"));
      const b = await openQueued(log.handle(), store, { snapshots });
      await b.flush();
      expect(b.state.cards).toEqual(["seed", "o1", "o2"]);
      expect(b.errors.filter((e) => e.code === "LOG_REPLACED")).toEqual([]);
      await b.close();
      expect(await stored(store)).toEqual([]);
    });

    it("are pushed once without a local snapshot (bound to the first log found)", async () => {
      const log = new MemoryLog();
      const store = new MemoryPendingStore();
      await putOld(store, oldRecord(1, "o1"));
      const b = await openQueued(log, store);
      await b.flush();
      expect(b.state.cards).toEqual(["o1"]);
      await b.close();
    });

    it("are set aside when the local snapshot's log was recreated, and stay bound to it", async () => {
      const log = new MemoryLog();
      const store = new MemoryPendingStore();
      const snapshots = new MemorySnapshotStore();
      const a = await openQueued(log, store, { snapshots });
      await a.update("add", { card: "seed" });
      await a.close();
      const old = (await snapshots.load("board"))!.logIdentity;
      await putOld(store, oldRecord(1, "o1"));
      log.recreate();
      const b = await openQueued(log.handle(), store, { snapshots });
      expect((await setAside(b)).details).toMatchObject({ ids: [1], queuedFor: [old] });
      await b.close(); // saves a snapshot of the new log
      expect((await stored(store))[0]!.logIdentity).toBe(old); // the binding is stored
      expect((await snapshots.load("board"))!.logIdentity).not.toBe(old);
      // The next open, whose snapshot is of the new log, still tells them apart.
      const c = await openQueued(log.handle(), store, { snapshots });
      await setAside(c);
      expect(c.pending.map((u) => u.otherLog)).toEqual([true]);
      expect(await queuedEntries(log)).toEqual([]);
      await c.close();
    });
  });
});
