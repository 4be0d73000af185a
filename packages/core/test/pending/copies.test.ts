import {
  createSynchronizer,
  encodeEntry,
  MemoryLog,
  MemoryPendingStore,
  type PendingQueue,
  type PendingRecord,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { until } from "../fixtures.js";
import { board, entries, openQueued } from "./fixtures.js";

/**
 * A queue's storage copied (a folder by `cp -r`, a cloned volume or browser profile) and both
 * copies live: the store's origin is in both, so each session queues under an origin of its own
 * (docs/offline.md, "Identity"); before, every replica skipped one copy's updates as re-sends of
 * the other's, and their callers were told they committed.
 */
describe("copies of one queue's storage", () => {
  it("two live copies each queue updates: every update of both is applied once", async () => {
    const log = new MemoryLog();
    const original = new MemoryPendingStore();
    const first = await openQueued(log, original);
    await first.update("add", { card: "before" });
    await first.close();
    const copy = original.copy();
    const a = await openQueued(log.handle(), original);
    const b = await openQueued(log.handle(), copy);
    const all: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      all.push(a.update("add", { card: `a${i}` }), b.update("add", { card: `b${i}` }));
      all.push(a.updateUnconditionally("bump", {}), b.updateUnconditionally("bump", {}));
    }
    await Promise.all(all);
    const reader = await createSynchronizer({ log: log.handle(), model: board });
    const cards = ["before", ...[0, 1, 2, 3, 4].flatMap((i) => [`a${i}`, `b${i}`])];
    expect([...reader.state.cards].sort()).toEqual(cards.sort());
    expect(reader.state.n).toBe(10);
    // Each session under an origin of its own, none the store's.
    const origins = new Set((await entries(log)).flatMap((e) => (e.origin ? [e.origin[0]] : [])));
    expect(origins.size).toBe(3);
    await Promise.all([a.close(), b.close(), reader.close()]);
  });

  it("records of an earlier session keep their origin: never in one entry with this session's", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    log.setOffline(true);
    const before = await openQueued(log, store);
    const old = [before.update("add", { card: "o1" }), before.update("add", { card: "o2" })];
    old.forEach((p) => p.catch(() => undefined));
    await Promise.all(old.map((p) => p.queued));
    await before.close();
    const a = await openQueued(log.handle(), store);
    const fresh = [a.update("add", { card: "n1" }), a.update("add", { card: "n2" })];
    log.setOffline(false);
    await Promise.all(fresh);
    await a.flush();
    expect(a.state.cards).toEqual(["o1", "o2", "n1", "n2"]);
    // The earlier session's pair, then this one's: two entries, each under its own origin.
    const ids = (await entries(log)).flatMap((e) => (e.origin ? [e.origin] : []));
    expect(ids).toHaveLength(2);
    expect(ids[0]![0]).not.toBe(ids[1]![0]);
    await a.close();
  });

  it("a record stored without an origin (an older SDK's) takes the queue's: committed ones are dropped", async () => {
    // The older SDK sent seq 5 under the store's origin and crashed before removing it.
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const q: PendingQueue = await store.open("board", "device-1");
    const legacy = (seq: number, card: string): PendingRecord => ({
      format: 1,
      seq,
      kind: "update",
      name: "add",
      args: { card },
      queuedAt: Date.now(),
      mv: board.version,
    });
    await q.put(legacy(5, "sent"));
    await q.put(legacy(6, "not sent"));
    const origin = q.origin;
    await q.close();
    const genesis = await createSynchronizer({ log: log.handle(), model: board });
    await genesis.close();
    // The older SDK's entry of seq 5, as it wrote it: format 2 with the store's origin.
    log.injectRaw(
      encodeEntry({
        v: 2,
        kind: "command",
        ts: Date.now(),
        client: "old",
        seed: 1,
        name: "add",
        args: { card: "sent" },
        origin: [origin, 5],
      }),
    );
    const a = await openQueued(log.handle(), store);
    await until(() => a.pendingCount === 1);
    expect(a.pending.map((u) => u.id)).toEqual([6]);
    await a.flush();
    expect(a.state).toEqual({ cards: ["sent", "not sent"], n: 0 });
    const reader = await createSynchronizer({ log: log.handle(), model: board });
    expect(reader.state.cards).toEqual(["sent", "not sent"]);
    await reader.close();
    await a.close();
  });
});
