import { createSynchronizer, MemoryLog, MemoryPendingStore } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { codeOf, until } from "../fixtures.js";
import { board, entries, openQueued, stored } from "./fixtures.js";

/**
 * The pending API of a closed replica, and calls that change the queue made together
 * (docs/offline.md, "Control"). A fresh-eyes trial: after `close()`, `discard(id)` resolved true
 * and `clearPending()` to 2 (with a `"drained"` event) while every record stayed stored and the
 * next replica pushed them, and `flush()` resolved; `rebindPending()` and `clearPending()` called
 * together both resolved to every update, the rebind once the clear had removed them.
 */
const OWNER = "device-1";

/** A replica that queued three updates while its log was unreachable, and closed. */
async function closedWithThree(log: MemoryLog, store: MemoryPendingStore) {
  const a = await openQueued(log, store);
  log.setOffline(true);
  await until(() => a.status !== "live");
  const queued = ["q1", "q2", "q3"].map((card) => a.update("add", { card }));
  for (const p of queued) p.catch(() => undefined);
  const ids = (await Promise.all(queued.map((p) => p.queued))).map((q) => q.id!);
  await a.close();
  return { a, ids };
}

describe("the pending API of a closed replica", () => {
  it("discard, clearPending and flush reject CLOSED and change nothing; the next replica pushes every update", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const { a, ids } = await closedWithThree(log, store);
    let events = 0;
    a.on("drained", () => (events += 1));
    a.subscribe(() => (events += 1), { optimistic: true });
    const b = await openQueued(log.handle(), store); // takes the queue over (still offline)
    expect(b.pendingCount).toBe(3);

    expect(await codeOf(a.discard(ids[0]!))).toBe("CLOSED");
    expect(await codeOf(a.clearPending())).toBe("CLOSED");
    expect(await codeOf(a.flush())).toBe("CLOSED");
    expect(await codeOf(a.rebindPending())).toBe("CLOSED");
    expect(events).toBe(0);
    // What it held when it closed, unchanged: the records went to the next replica.
    expect(a.pending.map((u) => u.id)).toEqual(ids);
    expect(a.pendingCount).toBe(3);
    expect(await codeOf(stored(store))).toBe("QUEUE_LOCKED"); // b holds it

    log.setOffline(false);
    await b.flush();
    expect(b.state.cards).toEqual(["q1", "q2", "q3"]); // each once
    await b.close();
    expect(await stored(store)).toEqual([]);
  });

  it("calls made before close() take effect, rebindPending too (a fresh-eyes trial: it rejected CLOSED)", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log, new MemoryPendingStore());
    log.setOffline(true);
    await until(() => a.status !== "live");
    const queued = ["x", "y"].map((card) => a.update("add", { card }));
    for (const p of queued) p.catch(() => undefined);
    const [x] = await Promise.all(queued.map((p) => p.queued));
    const rebound = a.rebindPending();
    const discarded = a.discard(x!.id!);
    const cleared = a.clearPending();
    const closed = a.close();
    expect(await rebound).toBe(0); // none was set aside for another log
    expect(await discarded).toBe(true);
    expect(await cleared).toBe(1);
    await closed;
    expect(await codeOf(a.rebindPending())).toBe("CLOSED");
  });

  it("an update refused at the call (invalid arguments) rejects queued, and its outcome is no unhandled rejection", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    try {
      const sync = await openQueued(new MemoryLog(), new MemoryPendingStore());
      // The documented pattern (docs/offline.md): await p.queued first, then p.
      expect(await codeOf(sync.update("add", { card: 7 as unknown as string }).queued)).toBe(
        "VALIDATION",
      );
      expect(
        await codeOf(
          sync.updateUnconditionally("add", { card: Number.NaN as unknown as string }).queued,
        ),
      ).toBe("VALIDATION");
      await new Promise((r) => setTimeout(r, 20)); // unhandled rejections are reported after a turn
      expect(unhandled).toEqual([]);
      await sync.close();
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("every other call that would act rejects CLOSED; reads keep the last state, nothing is called", async () => {
    const log = new MemoryLog();
    const sync = await openQueued(log, new MemoryPendingStore());
    await sync.update("add", { card: "c" });
    await sync.close();
    let calls = 0;
    sync.on("status", () => (calls += 1));
    sync.on("error", () => (calls += 1));
    sync.subscribe(() => (calls += 1));
    const others = await createSynchronizer({ log: log.handle(), model: board });
    await others.update("add", { card: "d" }); // nothing of it reaches the closed replica
    await others.close();
    const acts: Array<() => Promise<unknown>> = [
      () => sync.update("add", { card: "x" }),
      () => {
        const p = sync.update("add", { card: "x" });
        p.catch(() => undefined);
        return p.queued;
      },
      () => sync.updateUnconditionally("bump", {}),
      () => sync.fetchUpdates(),
      () => sync.synced(),
      () => sync.waitFor(sync.revision + 1),
      () => sync.history(),
      () => sync.stateAt(1),
      () => sync.compact(),
      () => sync.upgrade(),
      () => sync.saveSnapshot(),
    ];
    const codes = await Promise.all(acts.map((act) => codeOf(act())));
    expect(codes).toEqual(acts.map(() => "CLOSED"));
    await sync.close(); // again: resolves
    await sync.waitFor(sync.revision); // reached: resolves
    expect(sync.state.cards).toEqual(["c"]);
    expect(sync.optimisticState.cards).toEqual(["c"]);
    expect([sync.status, sync.writable, calls]).toEqual(["closed", false, 0]);
  });

  it("without a queue too: the pending calls reject CLOSED once closed", async () => {
    const sync = await createSynchronizer({ log: new MemoryLog(), model: board });
    await sync.flush();
    expect(await sync.clearPending()).toBe(0);
    await sync.close();
    for (const call of [
      () => sync.flush(),
      () => sync.discard(1),
      () => sync.clearPending(),
      () => sync.rebindPending(),
    ]) {
      expect(await codeOf(call())).toBe("CLOSED");
    }
  });

  it("a queue no replica holds is cleared through its store (a user logs out after close())", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    await closedWithThree(log, store);
    const queue = await store.open("board", OWNER); // QUEUE_LOCKED while a replica holds it
    await queue.clear();
    await queue.close();
    log.setOffline(false);
    const b = await openQueued(log.handle(), store);
    expect(b.pendingCount).toBe(0);
    await b.close();
    expect((await entries(log)).filter((e) => e.origin)).toEqual([]);
  });

  it("close() called again resolves once the first has released the queue", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const a = await openQueued(log, store);
    log.setOffline(true);
    await until(() => a.status !== "live");
    const p = a.update("add", { card: "q1" });
    p.catch(() => undefined);
    await p.queued;
    void a.close();
    await a.close();
    expect(a.status).toBe("closed");
    const b = await openQueued(log.handle(), store); // rejected QUEUE_LOCKED before
    expect(b.pendingCount).toBe(1);
    await b.close();
  });

  it("announces damaged records before the closed status when closed at once after opening", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const { ids } = await closedWithThree(log, store);
    store.corrupt("board", OWNER, ids[1]!);
    const b = await openQueued(log.handle(), store);
    const seen: string[] = [];
    b.on("error", (e) => seen.push(e.code));
    b.on("status", (s) => seen.push(s));
    await b.close();
    await new Promise((resolve) => setTimeout(resolve, 10)); // the open's first macrotask
    expect(seen).toEqual(["CORRUPT_PENDING", "closed"]);
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_PENDING"]);
  });
});

describe("calls that change the queue, made together", () => {
  /** A replica whose two loaded updates are set aside (their log was recreated); offline now. */
  async function withTwoAside() {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const a = await openQueued(log, store);
    log.setOffline(true);
    await until(() => a.status !== "live");
    const queued = [a.update("add", { card: "q1" }), a.updateUnconditionally("bump", {})];
    for (const p of queued) p.catch(() => undefined);
    await Promise.all(queued.map((p) => p.queued));
    await a.close();
    log.setOffline(false);
    log.recreate();
    const b = await openQueued(log.handle(), store);
    await until(() => b.errors.some((e) => e.code === "LOG_REPLACED"));
    log.setOffline(true); // nothing is sent: the outcome does not depend on the push's pace
    await until(() => b.status !== "live");
    return { b, store, log };
  }

  it("rebindPending() and clearPending() take effect in call order: the rebind's updates are queued when it resolves, then cleared", async () => {
    const { b, store } = await withTwoAside();
    const rebind = b.rebindPending().then((n) => ({
      n,
      pending: b.pending.map((u) => u.otherLog),
    }));
    const clear = b.clearPending().then((n) => ({ n, pending: b.pendingCount }));
    // Rebound, and queued when the rebind resolved (before, the clear had already removed them).
    expect(await rebind).toEqual({ n: 2, pending: [false, false] });
    expect(await clear).toEqual({ n: 2, pending: 0 });
    await b.close();
    expect(await stored(store)).toEqual([]);
  });

  it("clearPending() clears what was queued when it was called; close() waits for it", async () => {
    const { b, store, log } = await withTwoAside();
    void b.rebindPending();
    const clear = b.clearPending();
    const later = b.update("add", { card: "later" }); // queued after the call: not cleared
    later.catch(() => undefined);
    const closing = b.close();
    expect(await clear).toBe(2);
    await closing;
    expect(await codeOf(later)).toBe("CLOSED");
    expect((await stored(store)).map((r) => r.args)).toEqual([{ card: "later" }]);
    log.setOffline(false);
  });
});
