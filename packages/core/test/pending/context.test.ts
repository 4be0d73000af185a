import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  type PendingStore,
} from "@statesync/core";
import { describe, expect, it } from "vitest";

/**
 * A model whose commands draw on their context: what the optimistic view shows of a pending
 * update must be what it commits (an id drawn with `ctx.random()` that a later pending edit
 * refers to must not change when it commits).
 */
const stamps = defineModel({
  name: "stamps",
  state: z.object({ items: z.array(z.string()) }),
  initial: { items: [] },
  commands: {
    stamp: {
      args: z.object({ tag: z.string() }),
      apply(draft, { tag }, ctx) {
        draft.items.push(`${tag}:${ctx.timestamp}:${Math.floor(ctx.random() * 1e9)}`);
        draft.items.push(`${tag}:second draw:${Math.floor(ctx.random() * 1e9)}`);
      },
    },
    /** Renames the item whose drawn part is `id`: refused when there is none. */
    rename: {
      args: z.object({ of: z.string(), to: z.string() }),
      apply(draft, { of, to }) {
        const i = draft.items.indexOf(of);
        if (i < 0) throw new Error(`no item ${of}`);
        draft.items[i] = to;
      },
    },
  },
});

function open(log: MemoryLog, store: PendingStore = new MemoryPendingStore(), owner = "device") {
  return createSynchronizer({
    log,
    model: stamps,
    pending: pendingQueue({ store, owner }),
    compaction: false,
  });
}

describe("a pending update's context (ctx.timestamp, ctx.random)", () => {
  it("is the same in the optimistic view and in the commit, conditional and unconditional", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.setOffline(true);
    const done = [
      a.update("stamp", { tag: "u1" }),
      a.update("stamp", { tag: "u2" }), // may share an entry with u1: each keeps its own draws
      a.updateUnconditionally("stamp", { tag: "c1" }),
    ];
    await new Promise((r) => setTimeout(r, 5));
    const shown = [...a.optimisticState.items];
    expect(shown).toHaveLength(6);
    expect(new Set(shown).size).toBe(6);
    log.setOffline(false);
    await Promise.all(done);
    expect(a.state.items).toEqual(shown);
    await a.close();
  });

  it("lets a later pending edit refer to what an earlier one drew", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.setOffline(true);
    const added = a.update("stamp", { tag: "x" });
    const drawn = a.optimisticState.items[0]!;
    const renamed = a.update("rename", { of: drawn, to: "renamed" });
    log.setOffline(false);
    await added;
    await renamed;
    expect(a.state.items[0]).toBe("renamed");
    await a.close();
  });

  it("is kept across a restart (the record stored), and differs between queues", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const a = await open(log, store, "device-a");
    const b = await open(log, new MemoryPendingStore(), "device-b");
    log.setOffline(true);
    const qa = a.update("stamp", { tag: "t" });
    const qb = b.update("stamp", { tag: "t" });
    qa.catch(() => undefined);
    qb.catch(() => undefined);
    await qa.queued;
    await qb.queued;
    const shownA = [...a.optimisticState.items];
    const shownB = [...b.optimisticState.items];
    expect(shownA).toHaveLength(2);
    // Two queues' first updates at the same time still draw differently (no shared seed).
    expect(shownA[1]).not.toBe(shownB[1]);
    await a.close();
    await b.close();
    const again = await open(log, store, "device-a");
    expect([...again.optimisticState.items]).toEqual(shownA);
    log.setOffline(false);
    await again.flush();
    expect(again.state.items).toEqual(shownA);
    await again.close();
  });
});
