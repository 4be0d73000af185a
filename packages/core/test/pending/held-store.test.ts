import {
  MemoryLog,
  MemoryPendingStore,
  type PendingQueue,
  type PendingRecord,
  type PendingStore,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { until } from "../fixtures.js";
import { openQueued } from "./fixtures.js";

/**
 * A store whose writes can be held: while `held`, a `put` or `delete` starts but does not finish
 * until `release()`, as an IndexedDB write behind another tab's transaction that never ends (a
 * frozen or hung tab in the middle of one; seen in e2e: a tab's edits never committed while the
 * leading tab was frozen during its scan of the queues).
 */
function holdableStore(inner: PendingStore = new MemoryPendingStore()) {
  let held: false | "writes" | "puts" = false;
  const waiting: Array<{ go(): void; fail(): void }> = [];
  const gate = async <T>(write: () => Promise<T>): Promise<T> => {
    if (held)
      await new Promise<void>((go, fail) =>
        waiting.push({ go, fail: () => fail(new Error("the tab died")) }),
      );
    return write();
  };
  const store: PendingStore = {
    async open(key, owner) {
      const q = await inner.open(key, owner);
      const queue: PendingQueue = {
        get durable() {
          return q.durable;
        },
        get origin() {
          return q.origin;
        },
        load: () => q.load(),
        put: (record: PendingRecord) => gate(() => q.put(record)),
        delete: (seqs) => (held === "puts" ? q.delete(seqs) : gate(() => q.delete(seqs))),
        clear: () => (held === "puts" ? q.clear() : gate(() => q.clear())),
        close: () => q.close(),
      };
      return queue;
    },
  };
  return {
    store,
    inner,
    hold: () => void (held = "writes"),
    /** Holds puts only: a slow put that a delete of the same record may overtake. */
    holdPuts: () => void (held = "puts"),
    release: () => {
      held = false;
      for (const w of waiting.splice(0)) w.go();
    },
    /** The held writes never happen (the tab that made them died before they got through). */
    abandon: () => {
      held = false;
      for (const w of waiting.splice(0)) w.fail();
    },
  };
}

describe("a pending store whose writes do not finish (another tab holds the database)", () => {
  it("holds up neither the push nor the callers; `queued` waits for the write", async () => {
    const log = new MemoryLog();
    const held = holdableStore();
    const a = await openQueued(log, held.store);
    held.hold();
    const first = a.update("add", { card: "one" });
    const second = a.updateUnconditionally("add", { card: "two" });
    let queued = false;
    void first.queued.then(() => (queued = true));
    // Both commit while their records are still on their way to the store.
    await first;
    await second;
    expect(a.state.cards).toEqual(["one", "two"]);
    expect(a.pendingCount).toBe(0);
    expect(queued).toBe(false);
    held.release();
    expect((await first.queued).id).toBeGreaterThan(0);
    // The records go once their deletes get through: a reopened queue has nothing to push.
    await a.close();
    const b = await openQueued(log.handle(), held.inner);
    expect(b.pendingCount).toBe(0);
    expect(b.state.cards).toEqual(["one", "two"]);
    await b.close();
  });

  it("close() does not wait for ever for a write that does not finish", async () => {
    const log = new MemoryLog();
    const held = holdableStore();
    const a = await openQueued(log, held.store);
    log.setOffline(true);
    await until(() => a.status !== "live");
    held.hold();
    const p = a.update("add", { card: "x" }).catch((e: unknown) => e);
    await a.close();
    expect(await p).toMatchObject({ code: "CLOSED" });
    held.release();
  });

  it("never hands out again a seq that was sent without its record (a reopened queue's update is not taken for a duplicate)", async () => {
    // The kind: a queue learns its next seq from what its store holds, and a seq sent while its
    // record was on its way, whose write then never happened, is in the log but not in the store.
    const log = new MemoryLog();
    const held = holdableStore();
    const a = await openQueued(log, held.store);
    held.hold();
    await a.update("add", { card: "one" }); // sent after the wait, committed
    await a.close();
    held.abandon(); // the tab died: its put and delete never got through
    const b = await openQueued(log.handle(), held.inner);
    expect(b.pendingCount).toBe(0);
    await b.update("add", { card: "two" });
    expect(b.state.cards).toEqual(["one", "two"]);
    const c = await openQueued(log.handle(), new MemoryPendingStore(), { owner: "device-2" });
    expect(c.state.cards).toEqual(["one", "two"]);
    await Promise.all([b.close(), c.close()]);
  });

  it(
    "waits for a held store once, not once per update (the 2 s count from the oldest write)",
    {
      timeout: 12_000,
    },
    async () => {
      // Before: each awaited update waited 2 s for its put before the push, 2 s more for it before
      // its delete and 2 s for the delete: 30 s for these five, while a frozen tab held the store.
      const log = new MemoryLog();
      const held = holdableStore();
      const a = await openQueued(log, held.store);
      held.hold();
      for (const card of ["a", "b", "c", "d", "e"]) await a.update("add", { card });
      expect(a.state.cards).toEqual(["a", "b", "c", "d", "e"]);
      const late = a.update("add", { card: "f" });
      held.release();
      await late;
      expect((await late.queued).durable).toBe(false); // MemoryPendingStore
      await a.close();
      const b = await openQueued(log.handle(), held.inner);
      expect(b.pendingCount).toBe(0); // every delete went after its put
      await b.close();
    },
  );

  it("deletes a discarded update's record after its put, however late (it does not come back)", async () => {
    const log = new MemoryLog();
    const held = holdableStore();
    const a = await openQueued(log, held.store);
    log.setOffline(true);
    await until(() => a.status !== "live");
    held.holdPuts();
    const p = a.update("add", { card: "x" });
    const code = p.catch((e: { code?: string }) => e.code);
    expect(a.pending).toHaveLength(1);
    expect(await a.discard(a.pending[0]!.id)).toBe(true);
    expect(await code).toBe("ABORTED");
    held.release(); // the put lands now, after the delete was asked for
    await p.queued.catch(() => undefined);
    await a.close();
    const b = await openQueued(log.handle(), held.inner);
    expect(b.pending).toEqual([]);
    await b.close();
  });

  it("a record that fails to store after its update was sent: `queued` says not durable, the update commits", async () => {
    const log = new MemoryLog();
    const held = holdableStore();
    const a = await openQueued(log, held.store);
    held.hold();
    const p = a.update("add", { card: "x" });
    await p; // sent after the wait, committed
    held.abandon(); // the put fails
    expect(await p.queued).toMatchObject({ durable: false });
    expect(a.errors.map((e) => e.code)).toContain("QUEUE_FAILED");
    expect(a.state.cards).toEqual(["x"]);
    await a.close();
  });
});
