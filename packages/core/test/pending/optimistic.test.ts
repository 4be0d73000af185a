import { MemoryLog, pendingQueue } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { until } from "../fixtures.js";
import { board, injectCommand, openCounting, openQueued } from "./fixtures.js";

describe("the optimistic view", () => {
  it("shows an update made offline at once; state stays the confirmed one", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    log.setOffline(true);
    const done = a.update("add", { card: "x" });
    expect(a.optimisticState.cards).toEqual(["x"]);
    expect(a.state.cards).toEqual([]);
    expect(a.pending).toMatchObject([{ kind: "update", command: "add", args: { card: "x" } }]);
    const id = a.pending[0]!.id;
    expect(a.pending[0]!.queuedAt).toBeGreaterThan(0);
    expect(a.pendingCount).toBe(1);
    expect(await done.queued).toEqual({ id, durable: false });
    log.setOffline(false);
    const result = await done;
    expect(result.state.cards).toEqual(["x"]);
    expect(a.state.cards).toEqual(["x"]);
    expect(a.optimisticState.cards).toEqual(["x"]);
    expect(a.pendingCount).toBe(0);
    await a.close();
  });

  it("shows updates queued behind one in flight, in queue order", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    log.setAppendDelay(20);
    const all = ["a", "b", "c"].map((card) => a.update("add", { card }));
    expect(a.optimisticState.cards).toEqual(["a", "b", "c"]);
    await Promise.all(all);
    expect(a.state.cards).toEqual(["a", "b", "c"]);
    await a.close();
  });

  it("never shows a state without a still-pending update while the confirmed state jumps", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    const seen: string[][] = [];
    a.subscribe((state) => seen.push([...state.cards]), { optimistic: true });
    log.setOffline(true);
    const mine = ["m1", "m2", "m3"].map((card) => a.update("add", { card }));
    for (let i = 0; i < 30; i++) injectCommand(log, "add", { card: `o${i}` });
    log.setOffline(false);
    await Promise.all(mine);
    await until(() => seen.at(-1)?.length === 33); // (a slow view's notification may lag)
    // Every state shown after queueing holds all three of mine, once each.
    for (const cards of seen) {
      for (const m of ["m1", "m2", "m3"]) expect(cards.filter((c) => c === m)).toHaveLength(1);
    }
    expect(seen.at(-1)).toEqual([
      ...Array.from({ length: 30 }, (_, i) => `o${i}`),
      "m1",
      "m2",
      "m3",
    ]);
    expect(a.state.cards).toEqual(seen.at(-1));
    await a.close();
  });

  it("re-applies pending updates once per change of the confirmed state, not per entry", async () => {
    const log = new MemoryLog();
    const { sync: a, counter } = await openCounting(log);
    let notifications = 0;
    a.subscribe(() => (notifications += 1), { optimistic: true });
    log.setOffline(true);
    const pending = Array.from({ length: 50 }, () => a.update("bump", {}));
    expect(a.optimisticState.n).toBe(50);
    for (let i = 0; i < 200; i++) injectCommand(log, "add", { card: `o${i}` });
    counter.runs = 0;
    notifications = 0;
    log.setOffline(false);
    await a.waitFor(201);
    await new Promise((r) => setTimeout(r, 0));
    expect(a.optimisticState.cards).toHaveLength(200);
    expect(a.optimisticState.n).toBe(50);
    // 200 entries came in: the 50 pending bumps are re-run per notification (each computes the
    // view once), never per entry (that would be 10,000 runs).
    expect(notifications).toBeLessThan(200);
    expect(counter.runs).toBeLessThanOrEqual(50 * (notifications + 1) + 50 * 51);
    expect(counter.runs).toBeLessThan(200 * 50);
    await Promise.all(pending);
    await a.close();
  });

  it("keeps the view while only its own queue commits: draining n pending costs O(n) runs", async () => {
    const log = new MemoryLog();
    const { sync: a, counter } = await openCounting(log);
    const seen: number[] = [];
    a.subscribe((state) => seen.push(state.n), { optimistic: true });
    log.setOffline(true);
    const pending = Array.from({ length: 1_000 }, () => a.update("bump", {}));
    expect(a.optimisticState.n).toBe(1_000);
    counter.runs = 0;
    log.setOffline(false);
    await Promise.all(pending);
    await new Promise((r) => setTimeout(r, 0));
    expect(seen.every((n) => n === 1_000)).toBe(true);
    expect(a.state.n).toBe(1_000);
    // Each bump runs once in the writer; re-applying the rest after each of the 16 commits would
    // be about 8,000 runs more.
    expect(counter.runs).toBeLessThanOrEqual(2_000);
    await a.close();
  });

  it("a costly view while other writers' entries arrive one by one: every state shown holds the pending updates", async () => {
    const slow = {
      ...board,
      commands: {
        ...board.commands,
        bump: {
          ...board.commands.bump,
          apply(draft: { n: number }) {
            const until = Date.now() + 2; // a view that takes a few ms to compute
            while (Date.now() < until) {
              // spin
            }
            draft.n += 1;
          },
        },
      },
    } as typeof board;
    const log = new MemoryLog();
    const { createSynchronizer, MemoryPendingStore } = await import("@statesync/core");
    const a = await createSynchronizer({
      log,
      model: slow,
      pending: pendingQueue({ store: new MemoryPendingStore(), owner: "o" }),
      compaction: false,
    });
    const seen: Array<{ n: number; cards: number }> = [];
    a.subscribe((state) => seen.push({ n: state.n, cards: state.cards.length }), {
      optimistic: true,
    });
    log.failNextAppends(1_000_000); // our pushes keep failing: the updates stay pending
    const pending = [1, 2, 3].map(() => a.update("bump", {}));
    pending.forEach((p) => p.catch(() => undefined));
    for (let i = 0; i < 30; i++) {
      injectCommand(log, "add", { card: `o${i}` });
      await new Promise((r) => setTimeout(r, 0));
    }
    await a.waitFor(31);
    await until(() => seen.at(-1)?.cards === 30);
    expect(seen.every((s) => s.n === 3)).toBe(true);
    expect(a.optimisticState).toMatchObject({ n: 3 });
    expect(a.optimisticState.cards).toHaveLength(30);
    await a.close();
  });

  it("leaves out of the view an update that throws, and the queue refuses it", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    log.setOffline(true);
    const bad = a.update("take", { card: "nope" });
    const good = a.update("add", { card: "ok" });
    expect(a.optimisticState.cards).toEqual(["ok"]);
    const refused: string[] = [];
    a.on("refused", (e, u) => refused.push(`${e.code}:${u.command}`));
    log.setOffline(false);
    await expect(bad).rejects.toMatchObject({ code: "UPDATE_REFUSED" });
    await good;
    expect(refused).toEqual(["UPDATE_REFUSED:take"]);
    await until(() => a.pendingCount === 0);
    await a.close();
  });
});
