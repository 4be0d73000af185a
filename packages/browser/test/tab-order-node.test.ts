import { createSynchronizer, MemoryLog, MemoryPendingStore, pendingQueue } from "@statesync/core";
import { expect, it } from "vitest";
import { z } from "zod/v4";
import { defineModel } from "@statesync/core";
import { sharePendingAcrossTabs } from "../src/tabs/shared-pending.js";
import { TabPushOrder } from "../src/tabs/tab-order.js";

/**
 * Tabs push their queues in the order of their updates (docs/offline.md, "Tabs"). The stop 33
 * trial, offline in two tabs: tab G moved a card tab F had added (still pending), and when the
 * connection came back G's queue went first and the move was refused for good ("the card no
 * longer exists"), though the card was there a moment later.
 */
const board = defineModel({
  name: "tab-order-board",
  state: z.object({ cards: z.array(z.string()), title: z.string() }),
  initial: { cards: [], title: "" },
  commands: {
    stamp: {
      args: z.object({}),
      apply: (d, _a, ctx) =>
        void d.cards.push(`${Math.floor(ctx.random() * 1e6)}:${ctx.clientId}:${ctx.timestamp}`),
    },
    rename: {
      args: z.object({ title: z.string() }),
      apply: (d, { title }) => void (d.title = title),
    },
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
    take: {
      args: z.object({ card: z.string() }),
      apply(d, { card }) {
        const i = d.cards.indexOf(card);
        if (i < 0) throw new Error(`the card ${card} no longer exists`);
        d.cards.splice(i, 1);
      },
    },
  },
});

async function openTab(log: MemoryLog, name: string, tab: string) {
  const order = new TabPushOrder();
  const sync = await createSynchronizer({
    log: log.handle(),
    model: board,
    snapshots: false,
    compaction: false,
    pending: pendingQueue({
      store: new MemoryPendingStore(),
      owner: `q-${tab}`,
      order: order.of(`q-${tab}`),
    }),
  });
  return sharePendingAcrossTabs(sync, board, name, tab, `q-${tab}`, order);
}

const until = async (check: () => boolean, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 10));
  }
};
const tick = () => new Promise((r) => setTimeout(r, 5));

it.each([1, 2, 3])(
  "an edit of another tab's pending card commits after it (round %i)",
  async (round) => {
    const log = new MemoryLog();
    const name = `tab-order-${round}-${Date.now()}`;
    // The tab opened first would push first: G, whose edit comes last.
    const g = await openTab(log, name, "g");
    const f = await openTab(log, name, "f");
    log.setOffline(true);
    await until(() => f.sync.status !== "live" && g.sync.status !== "live");

    const added = f.sync.update("add", { card: "x" });
    await added.queued;
    await until(() => g.sync.pendingInOtherTabs.length === 1); // G sees F's card
    await tick();
    const moved = g.sync.update("take", { card: "x" });
    await moved.queued;
    await until(() => f.sync.pendingInOtherTabs.length === 1);
    // Both views run F's add, then G's take.
    expect(g.sync.optimisticState.cards).toEqual([]);
    expect(f.sync.optimisticState.cards).toEqual([]);
    await tick();
    const later = f.sync.update("add", { card: "y" });
    await later.queued;
    await until(() => g.sync.pendingInOtherTabs.length === 2);
    log.setOffline(false);

    await expect(Promise.all([added, moved, later])).resolves.toHaveLength(3);
    await until(() => f.sync.revision === g.sync.revision && f.sync.pendingCount === 0);
    expect(f.sync.state.cards).toEqual(["y"]);
    expect(g.sync.state).toEqual(f.sync.state);
    f.stop();
    g.stop();
    await Promise.all([f.sync.close(), g.sync.close()]);
  },
);

// The same trial: of two tabs' offline edits of one thing, each tab showed the other tab's value
// (its edits ran on top of the tab's own), so the tab that edited last showed the earlier edit.
it("two tabs' edits of one thing show the one made last, in both tabs, before and after they commit", async () => {
  const log = new MemoryLog();
  const name = `tab-view-${Date.now()}`;
  const f = await openTab(log, name, "f");
  const g = await openTab(log, name, "g");
  log.setOffline(true);
  await until(() => f.sync.status !== "live" && g.sync.status !== "live");

  const first = f.sync.update("rename", { title: "A" });
  await first.queued;
  await until(() => g.sync.pendingInOtherTabs.length === 1);
  await tick();
  const second = g.sync.update("rename", { title: "B" });
  await second.queued;
  await until(() => f.sync.pendingInOtherTabs.length === 1);
  expect(g.sync.optimisticState.title).toBe("B");
  expect(f.sync.optimisticState.title).toBe("B");
  const third = f.sync.update("add", { card: "z" }); // F's own, after G's: runs after it
  await third.queued;
  expect(f.sync.optimisticState).toEqual({ cards: ["z"], title: "B" });

  log.setOffline(false);
  await Promise.all([first, second, third]);
  await until(() => f.sync.revision === g.sync.revision && g.sync.pendingInOtherTabs.length === 0);
  expect(f.sync.state).toEqual({ cards: ["z"], title: "B" });
  expect(g.sync.optimisticState).toEqual(f.sync.state);
  f.stop();
  g.stop();
  await Promise.all([f.sync.close(), g.sync.close()]);
});

// The stop 34 trial: a command that reads its context showed another tab's client id as the
// tab's id, and the tab's own edit changed its value once another tab's edit ran before it.
it("a command's context is the same in every tab's view, its own tab's whatever runs around it", async () => {
  const log = new MemoryLog();
  const name = `tab-ctx-${Date.now()}`;
  const f = await openTab(log, name, "f");
  const g = await openTab(log, name, "g");
  log.setOffline(true);
  await until(() => f.sync.status !== "live" && g.sync.status !== "live");
  await f.sync.update("add", { card: "x" }).queued;
  await until(() => g.sync.pendingInOtherTabs.length === 1);
  await tick();
  const stamped = g.sync.update("stamp", {});
  await stamped.queued;
  await until(() => f.sync.pendingInOtherTabs.length === 1);
  const inG = g.sync.optimisticState.cards; // mixed: F's add, then G's stamp
  expect(inG).toHaveLength(2);
  expect(inG[1]).toMatch(new RegExp(`^\\d+:${g.sync.clientId}:\\d+$`));
  expect(f.sync.optimisticState.cards).toEqual(inG);
  // G's core alone shows it with the same context.
  expect(g.sync.pending.find((p) => p.command === "stamp")).toBeDefined();
  log.setOffline(false);
  await stamped;
  f.stop();
  g.stop();
  await Promise.all([f.sync.close(), g.sync.close()]);
});
