import {
  createSynchronizer,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  compareOrderKeys,
  type OrderKey,
  type PushOrder,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { earliestBefore, PushTurns } from "../../src/pending/push-order.js";
import { until } from "../fixtures.js";
import { board, entries } from "./fixtures.js";

type Board = Awaited<ReturnType<typeof openTab>>;

/**
 * A replica with a queue of its own that does not overtake `others`' pending updates (what the
 * browser's tabs tell each other: `@statesync/browser`, tabs/shared-pending.ts).
 */
async function openTab(log: MemoryLog, owner: string, others: () => Board[]) {
  const self: { sync?: Board } = {};
  // Until this replica has applied it (the other queue drops it once its own replica has).
  const seen = new Map<string, OrderKey>();
  const order: PushOrder = {
    before(key, skip, applied) {
      for (const other of others()) {
        for (const p of other.pending) {
          seen.set(`${p.origin}:${p.id}`, { queuedAt: p.queuedAt, origin: p.origin, id: p.id });
        }
      }
      let first: OrderKey | undefined;
      for (const [id, k] of seen) {
        if ((applied(k.origin) ?? 0) >= k.id) seen.delete(id);
        else if (skip(k) || compareOrderKeys(k, key) >= 0) continue;
        else if (first === undefined || compareOrderKeys(k, first) < 0) first = k;
      }
      return first;
    },
    onChange(listener) {
      const stops = [...others(), self.sync!].map((s) =>
        s.subscribe(listener, { optimistic: true }),
      );
      return () => stops.forEach((stop) => stop());
    },
  };
  const sync = await createSynchronizer({
    log,
    model: board,
    pending: pendingQueue({ store: new MemoryPendingStore(), owner, order }),
    compaction: false,
  });
  self.sync = sync;
  return sync;
}

const tick = () => new Promise((r) => setTimeout(r, 3)); // a later queuedAt

describe("queues that do not overtake each other (PushOrder)", () => {
  // The stop 33 trial (docs/offline.md, "Tabs"): tab G's offline edit of a card tab F added
  // (still pending) was pushed before F's add and refused for good, and of two tabs' edits of one
  // thing the one pushed last won, not the one made last.
  it("pushes the updates of two queues in the order they were queued", async () => {
    const log = new MemoryLog();
    const tabs: Board[] = [];
    const f = await openTab(log, "tab-f", () => tabs.filter((t) => t !== f));
    tabs.push(f);
    const g = await openTab(log.handle(), "tab-g", () => tabs.filter((t) => t !== g));
    tabs.push(g);
    log.setOffline(true);
    await until(() => f.status !== "live" && g.status !== "live");

    const added = f.update("add", { card: "x" }); // F adds a card
    await tick();
    const taken = g.update("take", { card: "x" }); // G takes it (not in G's own view yet)
    await tick();
    const later = f.update("add", { card: "y" }); // F goes on
    await Promise.all([added.queued, taken.queued, later.queued]);
    log.setOffline(false);

    await Promise.all([added, taken, later]);
    await until(() => f.revision === 4 && g.revision === 4); // the genesis, then 3
    expect(f.state.cards).toEqual(["y"]);
    expect(g.state).toEqual(f.state);
    const updates = (await entries(log)).filter((e) => e.kind === "update");
    const origins = updates.map((e) => e.origin?.[0]);
    expect(origins).toHaveLength(3); // x, take, y: three entries (y not batched with x)
    expect(origins[0]).toBe(origins[2]);
    expect(origins[1]).not.toBe(origins[0]);
    await Promise.all([f.close(), g.close()]);
  });

  it("an update of another queue that never commits holds this queue's for a while only", async () => {
    const never: OrderKey = { queuedAt: 1, origin: "frozen-tab", id: 1 };
    const order: PushOrder = {
      before: (key, skip) => (compareOrderKeys(never, key) < 0 && !skip(never) ? never : undefined),
      onChange: () => () => undefined,
    };
    const turns = new PushTurns(order, new AbortController().signal, undefined, 40);
    const mine = { queuedAt: 2, origin: "me", id: 1 };
    const started = Date.now();
    const answers: boolean[] = [];
    for (let i = 0; i < 10 && answers.at(-1) !== true; i++) answers.push(await turns.turn(mine));
    expect(answers.at(-1)).toBe(true);
    expect(answers.slice(0, -1).every((a) => a === false)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(35); // it did wait
    // An update queued before the frozen one is never held.
    expect(await turns.turn({ queuedAt: 0, origin: "me", id: 0 })).toBe(true);
    // The chunk stops before an update that the other queue's comes before.
    const fresh = new PushTurns(order, new AbortController().signal, undefined, 40);
    const chunk = [
      { queuedAt: 0, origin: "me", id: 1 },
      { queuedAt: 0.5, origin: "me", id: 2 },
      { queuedAt: 2, origin: "me", id: 3 },
    ];
    expect(fresh.cut(chunk, (k) => k).map((k) => k.id)).toEqual([1, 2]);
  });

  it("a queue that makes no progress is waited for once, not once per update of it", async () => {
    // A frozen tab with several edits queued before this queue's: before, each of them was
    // waited for in turn (10 s each; a trial: ten frozen edits held every other tab 100 s).
    const frozen: OrderKey[] = [1, 2, 3].map((id) => ({ queuedAt: id, origin: "frozen", id }));
    let applied = 0; // what the pushing replica applied of the frozen queue
    const order: PushOrder = {
      before: (key, skip, appliedOf) =>
        earliestBefore(key, frozen, skip, (o) => (o === "frozen" ? appliedOf(o) : undefined)),
      onChange: () => () => undefined,
    };
    const replica = { appliedSeq: () => applied, onChange: () => () => undefined };
    const turns = new PushTurns(order, new AbortController().signal, replica, 40);
    const mine = (id: number) => ({ queuedAt: 10 + id, origin: "me", id });
    let waits = 0;
    while (!(await turns.turn(mine(1)))) waits += 1;
    // One wait (a turn that slept, maybe once more when its timer fired a little early, then
    // one that passed the queue), not one per frozen update (at least 2 each: 6 before).
    expect(waits).toBeGreaterThan(0);
    expect(waits).toBeLessThanOrEqual(4);
    // Every later update of this queue goes at once: the frozen queue is passed as a whole.
    expect(await turns.turn(mine(2))).toBe(true);
    expect(turns.cut([mine(2), mine(3)], (k) => k)).toHaveLength(2);
    // Once the frozen queue commits something, its later updates are waited for again.
    applied = 1;
    expect(await turns.turn(mine(4))).toBe(false);
  });

  // The stop 34 re-check: a page's second replica (a drained tab's slot) pushed on a state that
  // did not hold an update the page's first replica had already read; its command threw there
  // and the update was refused for good, unseen.
  it("a pending update that fails on a state behind the log runs again at its tail", async () => {
    const log = new MemoryLog();
    const behind = await createSynchronizer({
      log: log.handle(),
      model: board,
      live: false, // reads the log only when it must
      compaction: false,
      pending: pendingQueue({ store: new MemoryPendingStore(), owner: "behind" }),
    });
    const other = await createSynchronizer({ log: log.handle(), model: board, compaction: false });
    await other.update("add", { card: "x" });
    expect(behind.state.cards).toEqual([]);
    await expect(behind.update("take", { card: "x" })).resolves.toMatchObject({
      state: { cards: [] },
    });
    // One that fails at the log's tail too is refused.
    await expect(behind.update("take", { card: "y" })).rejects.toMatchObject({
      code: "UPDATE_REFUSED",
    });
    await Promise.all([behind.close(), other.close()]);
  });
});
