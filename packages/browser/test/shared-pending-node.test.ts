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
