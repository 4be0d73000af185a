import {
  createSynchronizer,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  type PendingQueueSetup,
  type PendingQueue,
  type PendingRecord,
  type PendingStore,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { codeOf, until } from "../fixtures.js";
import { board, entries, injectCommand, openQueued } from "./fixtures.js";

describe("the offline queue", () => {
  it("takes the queue only as pendingQueue({ store, owner }), refusing a bare object or a bad owner", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const bare = { store, owner: "o" } as unknown as PendingQueueSetup;
    const error = await createSynchronizer({ log, model: board, pending: bare }).catch((e) => e);
    expect(error).toMatchObject({ code: "VALIDATION" });
    expect(String(error.message)).toMatch(/pendingQueue/);
    expect(() => pendingQueue({ store, owner: "a b" })).toThrow(/owner/);
    expect(() => pendingQueue({ store: {} as PendingStore, owner: "o" })).toThrow(/PendingStore/);
  });

  it("a queued update that nobody awaits is no unhandled rejection when the replica closes", async () => {
    // Fresh-eyes trial: an offline-first app calls update() without awaiting it; close()
    // rejected each queued one CLOSED (still stored) and Node ended on the unhandled rejection.
    // Vitest fails the run on an unhandled rejection, so this test fails without the fix.
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const a = await openQueued(log, store);
    log.setOffline(true);
    await until(() => a.status !== "live");
    const p = a.update("add", { card: "x" });
    void a.updateUnconditionally("bump", {});
    await p.queued;
    await a.close();
    await expect(p).rejects.toMatchObject({ code: "CLOSED", details: { queued: true } });
    const b = await openQueued(log.handle(), store);
    expect(b.pendingCount).toBe(2); // both still stored
    await b.close().catch(() => undefined);
  });

  it("keeps named commands across a restart and pushes them once, in order", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const a = await openQueued(log, store);
    log.setOffline(true);
    const first = a.update("add", { card: "one" });
    const second = a.updateUnconditionally("add", { card: "two" });
    const third = a.update("add", { card: "three" });
    const outcomes = [first, second, third].map((p) => p.catch((e: unknown) => e));
    expect((await third.queued).durable).toBe(false); // a memory store says so
    await a.close();
    for (const outcome of await Promise.all(outcomes)) {
      expect(outcome).toMatchObject({ code: "CLOSED", details: { queued: true, durable: false } });
    }
    const b = await openQueued(log.handle(), store);
    expect(b.pending.map((u) => [u.kind, u.command, u.args])).toEqual([
      ["update", "add", { card: "one" }],
      ["command", "add", { card: "two" }],
      ["update", "add", { card: "three" }],
    ]);
    expect(b.optimisticState.cards).toEqual(["one", "two", "three"]);
    let drained = 0;
    b.on("drained", () => (drained += 1));
    log.setOffline(false);
    await b.flush();
    expect(b.state.cards).toEqual(["one", "two", "three"]);
    expect(drained).toBe(1);
    const written = (await entries(log)).filter((e) => e.origin);
    const id = (await first.queued).id!;
    expect(written.map((e) => [e.kind, e.origin![1] - id, e.v])).toEqual([
      ["update", 0, 2],
      ["command", 1, 3],
      ["update", 2, 2],
    ]);
    await b.close();
  });

  it("rebases each pending update on the latest confirmed state and refuses the ones that now fail", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    await a.update("add", { card: "x" });
    log.setOffline(true);
    const take = a.update("take", { card: "x" });
    const add = a.update("add", { card: "y" });
    expect(a.optimisticState.cards).toEqual(["y"]);
    injectCommand(log, "take", { card: "x" }); // another writer took it meanwhile
    const events: unknown[] = [];
    a.on("refused", (error, update) => events.push([error.code, update.id, update.command]));
    log.setOffline(false);
    const id = (await take.queued).id;
    const refused = await take.catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "UPDATE_REFUSED", details: { id } });
    expect((refused as Error).cause).toBeInstanceOf(Error);
    expect((await add).state.cards).toEqual(["y"]);
    expect(events).toEqual([["UPDATE_REFUSED", id, "take"]]);
    expect(a.pendingCount).toBe(0);
    await a.close();
  });

  it("keeps a plain recipe in memory only, and pushes it when the log is back", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    log.setOffline(true);
    const p = a.update((draft) => {
      draft.n += 5;
      return "five";
    });
    const { id } = await p.queued;
    expect(await p.queued).toEqual({ id, durable: false });
    expect(a.pending).toMatchObject([{ id, command: undefined, durable: false }]);
    expect(a.optimisticState.n).toBe(5);
    log.setOffline(false);
    expect(await p).toMatchObject({ result: "five", state: { n: 5 } });
    await a.close();
  });

  it("keeps an update queued through failing appends and commits it once", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    log.failNextAppends(3, "UNAVAILABLE");
    log.loseNextAcks(1);
    const p = a.updateUnconditionally("bump", {});
    const q = a.update("add", { card: "x" });
    await Promise.all([p, q]);
    expect(a.state).toEqual({ cards: ["x"], n: 1 });
    expect(a.pending).toEqual([]);
    await a.close();
  });

  it("a replica that does not follow the log never loses a committed update from its view", async () => {
    const log = new MemoryLog();
    const { createSynchronizer } = await import("@statesync/core");
    const { board } = await import("./fixtures.js");
    const a = await createSynchronizer({
      log,
      model: board,
      live: false,
      compaction: false,
      pending: pendingQueue({ store: new MemoryPendingStore(), owner: "o" }),
    });
    const seen: number[] = [];
    a.subscribe((state) => seen.push(state.n), { optimistic: true });
    const done = [a.updateUnconditionally("bump", {}), a.updateUnconditionally("bump", {})];
    await Promise.all(done);
    await until(() => seen.length > 0);
    expect(seen.every((n) => n === 2)).toBe(true);
    expect(a.state.n).toBe(2);
    await a.close();
  });

  it("waits as long as it takes: no outcome timeout while offline", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    log.setOffline(true);
    let settled = false;
    const p = a.update("add", { card: "late" }, { outcomeTimeoutMs: 10 });
    void p.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((r) => setTimeout(r, 200));
    expect(settled).toBe(false);
    log.setOffline(false);
    await p;
    await a.close();
  });

  it("discards one pending update, clears the queue, and counts", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const a = await openQueued(log, store);
    log.setOffline(true);
    const ps = ["a", "b", "c", "d"].map((card) => a.update("add", { card }));
    const codes = ps.map((p) => codeOf(p));
    const ids = (await Promise.all(ps.map((p) => p.queued))).map((q) => q.id!);
    expect(ids.map((id) => id - ids[0]!)).toEqual([0, 1, 2, 3]);
    expect(await a.discard(ids[1]!)).toBe(true);
    expect(await a.discard(ids[1]!)).toBe(false);
    expect(await codes[1]).toBe("ABORTED");
    expect(a.optimisticState.cards).toEqual(["a", "c", "d"]);
    expect(a.pendingCount).toBe(3);
    expect(await a.clearPending()).toBe(3);
    expect(a.pendingCount).toBe(0);
    expect(a.optimisticState.cards).toEqual([]);
    expect(await Promise.all(codes)).toEqual(["ABORTED", "ABORTED", "ABORTED", "ABORTED"]);
    await a.close();
    const b = await openQueued(log.handle(), store);
    expect(b.pending).toEqual([]); // the records are gone too
    log.setOffline(false);
    await b.close();
  });

  it("refuses a second synchronizer on the same queue with QUEUE_LOCKED; another owner is fine", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const a = await openQueued(log, store);
    expect(await codeOf(openQueued(log.handle(), store))).toBe("QUEUE_LOCKED");
    const other = await openQueued(log.handle(), store, { owner: "device-2" });
    await other.update("add", { card: "z" });
    await a.waitFor(other.revision);
    expect(a.state.cards).toEqual(["z"]);
    await other.close();
    await a.close();
    const again = await openQueued(log.handle(), store);
    await again.close();
  });

  it("does not count an update as queued when the store refuses it (QUEUE_FAILED)", async () => {
    const log = new MemoryLog();
    const failing: PendingStore = {
      async open(key, owner) {
        const q = await new MemoryPendingStore().open(key, owner);
        return Object.assign(Object.create(q) as PendingQueue, {
          put: async (_: PendingRecord) => {
            throw new Error("disk full");
          },
          close: () => q.close(),
        });
      },
    };
    const a = await openQueued(log, failing);
    const p = a.update("add", { card: "x" });
    expect(await codeOf(p.queued)).toBe("QUEUE_FAILED");
    expect(await codeOf(p)).toBe("QUEUE_FAILED");
    expect(a.pendingCount).toBe(0);
    expect(a.state.cards).toEqual([]);
    await a.close();
  });

  it("close() waits until the queue's writes are stored", async () => {
    const log = new MemoryLog();
    const memory = new MemoryPendingStore();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let stored = 0;
    const slow: PendingStore = {
      async open(key, owner) {
        const q = await memory.open(key, owner);
        return Object.assign(Object.create(q) as PendingQueue, {
          put: async (r: PendingRecord) => {
            await gate;
            await q.put(r);
            stored += 1;
          },
          close: () => q.close(),
        });
      },
    };
    const a = await openQueued(log, slow);
    log.setOffline(true);
    const p = a.update("add", { card: "x" });
    p.catch(() => undefined);
    const closing = a.close();
    setTimeout(release, 20);
    await closing;
    expect(stored).toBe(1);
    const b = await openQueued(log.handle(), memory);
    expect(b.pendingCount).toBe(1);
    await b.close();
  });
});
