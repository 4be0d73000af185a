import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
} from "@statesync/core";
import { afterEach, beforeEach, expect, it } from "vitest";
import { z } from "zod/v4";
import { sharePendingAcrossTabs } from "../src/tabs/shared-pending.js";

/**
 * A tab runs the other tabs' pending commands in its optimistic view (docs/offline.md, "Tabs").
 * One whose `apply` returns a promise is left out there, as the SDK refuses it where it runs one
 * (README, "Recipes are synchronous"): what it wrote before its first `await` does not show, and
 * its promise, whose write after the `await` throws on the revoked draft, is handled (it was an
 * unhandled rejection in every other tab, each time its view was computed).
 */
const board = defineModel({
  name: "board",
  state: z.object({ cards: z.array(z.string()) }),
  initial: { cards: [] },
  commands: {
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
    late: {
      args: z.object({}),
      async apply(d) {
        await null;
        d.cards.push("late");
      },
    },
    eager: {
      args: z.object({}),
      async apply(d) {
        d.cards.push("eager");
      },
    },
    // Index 1e9: the view computed it for 34 s in Immer, in every other tab (stop 21).
    far: {
      args: z.object({ i: z.number().int().nonnegative() }),
      apply(d, { i }) {
        d.cards[i] = "far";
      },
    },
  },
});

let unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => unhandled.push(e);
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

const open = (log: MemoryLog, owner: string) =>
  createSynchronizer({
    log: log.handle(),
    model: board,
    snapshots: false,
    compaction: false,
    pending: pendingQueue({ store: new MemoryPendingStore(), owner }),
  });

it("leaves another tab's command that returns a promise, or leaves holes, out of the view, handling its promise", async () => {
  const log = new MemoryLog();
  const a = await open(log, "tab-a");
  const b = await open(log, "tab-b");
  const name = `shared-async-${Date.now()}`;
  const sharedA = sharePendingAcrossTabs(a, board, name, "a");
  const sharedB = sharePendingAcrossTabs(b, board, name, "b");
  log.setOffline(true);
  for (const [command, args] of [
    ["late", {}],
    ["eager", {}],
    ["far", { i: 1_000_000_000 }],
    ["add", { card: "x" }],
  ] as const) {
    a.update(command, args as never).catch(() => undefined);
  }
  const deadline = Date.now() + 5_000;
  while (sharedB.sync.optimisticState.cards.length === 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
  }
  expect(sharedB.sync.optimisticState.cards).toEqual(["x"]);
  await new Promise((r) => setTimeout(r, 20));
  expect(unhandled).toEqual([]);
  sharedA.stop();
  sharedB.stop();
  await Promise.all([a.close(), b.close()]);
});

it("shows a queue's edits once when its tab reloads while offline (a new tab, the same queue)", async () => {
  // A trial: tab B queued edits offline and reloaded; its new tab reported the same queue's
  // edits under a new tab id while the old report stayed, and every other tab showed them twice
  // for as long as the server was down. A report of a queue replaces that queue's older ones.
  const log = new MemoryLog();
  const a = await open(log, "tab-a");
  const name = `shared-reload-${Date.now()}`;
  const sharedA = sharePendingAcrossTabs(a, board, name, "a", "queue-a");
  const tabB = new BroadcastChannel(`${name}:pending`);
  const ops = [
    { c: "add", a: { card: "b1" }, at: 1 },
    { c: "add", a: { card: "b2" }, at: 2 },
  ];
  const report = (from: string, q?: string) =>
    tabB.postMessage({ t: "pending", from, ...(q ? { q } : {}), revision: a.revision, ops });
  const shows = async (cards: string[]) => {
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline) {
      if (JSON.stringify(sharedA.sync.optimisticState.cards) === JSON.stringify(cards)) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(sharedA.sync.optimisticState.cards).toEqual(cards);
  };
  report("b-before-reload", "queue-b");
  await shows(["b1", "b2"]);
  report("b-after-reload", "queue-b");
  await new Promise((r) => setTimeout(r, 50));
  await shows(["b1", "b2"]);
  // Another queue's edits still show beside them.
  report("c", "queue-c");
  await shows(["b1", "b2", "b1", "b2"]);
  tabB.close();
  sharedA.stop();
  await a.close();
});
