import {
  MemoryLog,
  MemoryPendingStore,
  StateSyncError,
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
 * leading tab was frozen during its scan of the queues). Held writes go in the order they were
 * called, and a `close()` meanwhile returns at once but closes after them, as IndexedDB does.
 */
function holdableStore(inner: PendingStore = new MemoryPendingStore()) {
  let held = false;
  let gate = Promise.resolve();
  let open = () => {};
  let fail = () => {};
  let chain: Promise<unknown> = Promise.resolve();
  let closed = false;
  const gated = <T>(write: () => Promise<T>): Promise<T> => {
    if (closed) return Promise.reject(new StateSyncError("CLOSED", "the queue is closed"));
    if (!held) return write();
    const run = chain.then(() => gate).then(write);
    chain = run.catch(() => undefined);
    return run;
  };
  const store: PendingStore = {
    async open(key, owner) {
      const q = await inner.open(key, owner);
      closed = false;
      const queue: PendingQueue = {
        get durable() {
          return q.durable;
        },
        get origin() {
          return q.origin;
        },
        load: () => q.load(),
        put: (record: PendingRecord) => gated(() => q.put(record)),
        delete: (seqs) => gated(() => q.delete(seqs)),
        clear: () => gated(() => q.clear()),
        close: () => {
          closed = true; // later calls are refused; the ones before still go (as IndexedDB)
          if (!held) return q.close();
          chain = chain.then(() => gate.catch(() => undefined)).then(() => q.close());
          return Promise.resolve();
        },
      };
      return queue;
    },
  };
  return {
    store,
    inner,
    hold: () => {
      held = true;
      gate = new Promise<void>((resolve, reject) => {
        open = resolve;
        fail = () => reject(new Error("the tab died"));
      });
      gate.catch(() => undefined);
    },
    /** Lets the held writes go, in order; resolves once they (and a deferred close) are done. */
    release: async () => {
      held = false;
      open();
      await chain;
    },
    /** The held writes never happen (the tab that made them died before they got through). */
    abandon: async () => {
      held = false;
      fail();
      await chain;
    },
  };
}

/**
 * A replica of `board` on a new log and a {@link holdableStore} whose writes are held from now
 * on; with `offline`, the log is unreachable first (its updates stay queued).
 */
async function openHeld(options: { offline?: boolean } = {}) {
  const log = new MemoryLog();
  const held = holdableStore();
  const a = await openQueued(log, held.store);
  if (options.offline) {
    log.setOffline(true);
    await until(() => a.status !== "live");
  }
  held.hold();
  return { log, held, a };
}

describe("a pending store whose writes do not finish (another tab holds the database)", () => {
  it("holds up neither the push nor the callers; `queued` waits for the write", async () => {
    const { log, held, a } = await openHeld();
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
    await held.release();
    expect((await first.queued).id).toBeGreaterThan(0);
    // The records go once their deletes get through: a reopened queue has nothing to push.
    await a.close();
    const b = await openQueued(log.handle(), held.inner);
    expect(b.pendingCount).toBe(0);
    expect(b.state.cards).toEqual(["one", "two"]);
    await b.close();
  });

  it("close() says when an update's record was still on its way (not that it stays queued)", async () => {
    // Before: `details.queued: true`, "the update stays queued", and the put then failed.
    const { held, a } = await openHeld({ offline: true });
    const p = a.update("add", { card: "x" }).catch((e: unknown) => e);
    await a.close();
    expect(await p).toMatchObject({
      code: "CLOSED",
      details: { queued: false, storing: true, durable: false },
    });
    await held.abandon();
  });

  it("close() does not wait for ever for a write that does not finish", async () => {
    const { held, a } = await openHeld({ offline: true });
    const p = a.update("add", { card: "x" }).catch((e: unknown) => e);
    await a.close();
    expect(await p).toMatchObject({ code: "CLOSED" });
    await held.release();
  });

  it("never hands out again a seq that was sent without its record (a reopened queue's update is not taken for a duplicate)", async () => {
    // The kind: a queue learns its next seq from what its store holds, and a seq sent while its
    // record was on its way, whose write then never happened, is in the log but not in the store.
    const { log, held, a } = await openHeld();
    await a.update("add", { card: "one" }); // sent after the wait, committed
    await a.close();
    await held.abandon(); // the tab died: its put and delete never got through
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
      const { log, held, a } = await openHeld();
      for (const card of ["a", "b", "c", "d", "e"]) await a.update("add", { card });
      expect(a.state.cards).toEqual(["a", "b", "c", "d", "e"]);
      const late = a.update("add", { card: "f" });
      await held.release();
      await late;
      expect((await late.queued).durable).toBe(false); // MemoryPendingStore
      await a.close();
      const b = await openQueued(log.handle(), held.inner);
      expect(b.pendingCount).toBe(0); // every delete went after its put
      await b.close();
    },
  );

  for (const how of ["discard", "clearPending"] as const) {
    it(`a ${how}ed update whose put is held across close() does not come back`, async () => {
      // Found by a fresh-eyes trial (also in Chromium's IndexedDB): with the delete chained
      // after the held put, it reached a queue closed meanwhile, and the put then landed.
      const { log, held, a } = await openHeld({ offline: true });
      const p = a.update("add", { card: "x" });
      const code = p.catch((e: { code?: string }) => e.code);
      if (how === "discard") expect(await a.discard(a.pending[0]!.id)).toBe(true);
      else expect(await a.clearPending()).toBe(1);
      expect(await code).toBe("ABORTED");
      await a.close();
      await held.release(); // the other tab's transaction ends: the put lands, then the delete
      await expect(p.queued).resolves.toBeDefined();
      log.setOffline(false);
      const b = await openQueued(log.handle(), held.inner);
      expect(b.pending).toEqual([]);
      await b.flush();
      expect(b.state.cards).toEqual([]);
      await b.close();
    });
  }

  it("a discarded update whose put then fails: `queued` rejects (it was never sent)", async () => {
    const { held, a } = await openHeld({ offline: true });
    const p = a.update("add", { card: "x" });
    void p.catch(() => undefined);
    expect(await a.discard(a.pending[0]!.id)).toBe(true);
    await held.abandon();
    await expect(p.queued).rejects.toMatchObject({ code: "QUEUE_FAILED" });
    await a.close();
  });

  it("a record that fails to store after its update was sent: `queued` says not durable, the update commits", async () => {
    const { held, a } = await openHeld();
    const p = a.update("add", { card: "x" });
    await p; // sent after the wait, committed
    await held.abandon(); // the put fails
    expect(await p.queued).toMatchObject({ durable: false });
    expect(a.errors.map((e) => e.code)).toContain("QUEUE_FAILED");
    expect(a.state.cards).toEqual(["x"]);
    await a.close();
  });
});
