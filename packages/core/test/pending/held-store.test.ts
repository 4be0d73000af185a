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
  let held = false;
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
        delete: (seqs) => gate(() => q.delete(seqs)),
        clear: () => gate(() => q.clear()),
        close: () => q.close(),
      };
      return queue;
    },
  };
  return {
    store,
    inner,
    hold: () => void (held = true),
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
});
