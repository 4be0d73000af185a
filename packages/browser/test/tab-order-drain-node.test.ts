import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  type PendingRecord,
  type PendingStore,
} from "@statesync/core";
import { expect, it } from "vitest";
import { z } from "zod/v4";
import { drainOrphanedSlots } from "../src/tabs/orphans.js";
import { durable } from "./support/durable-store.js";
import { sharePendingAcrossTabs } from "../src/tabs/shared-pending.js";
import { TabPushOrder } from "../src/tabs/tab-order.js";

/**
 * The order of the tabs' queues (docs/offline.md, "Tabs") and the queues it must leave alone.
 * Found by the stop 34 trial of that order: the leading tab's drain of a closed tab's slot pushed
 * the whole slot ahead of the leading tab's earlier edits (a rename made last lost, an edit of
 * the leader's pending card refused, unseen); and updates set aside for another log were
 * reported to the other tabs, which showed them and waited 10 s for each before pushing.
 */
const board = defineModel({
  name: "board",
  state: z.object({ cards: z.array(z.string()), title: z.string() }),
  initial: { cards: [], title: "" },
  commands: {
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
    take: {
      args: z.object({ card: z.string() }),
      apply(d, { card }) {
        const i = d.cards.indexOf(card);
        if (i < 0) throw new Error(`the card ${card} no longer exists`);
        d.cards.splice(i, 1);
      },
    },
    title: {
      args: z.object({ title: z.string() }),
      apply: (d, { title }) => void (d.title = title),
    },
  },
});

const until = async (check: () => boolean | Promise<boolean>, ms = 20_000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
};

async function openTab(log: MemoryLog, store: PendingStore, name: string, tab: string) {
  const order = new TabPushOrder();
  const sync = await createSynchronizer({
    log: log.handle(),
    model: board,
    snapshots: false,
    compaction: false,
    pending: pendingQueue({ store, owner: `q-${tab}`, order: order.of(`q-${tab}`) }),
  });
  return { order, ...sharePendingAcrossTabs(sync, board, name, tab, `q-${tab}`, order) };
}

/** The leading tab `a` (queue `q-0`) draining the other slots of queue `q` on `log`. */
function drainAs(
  a: Awaited<ReturnType<typeof openTab>>,
  { store, log, name }: { store: PendingStore; log: MemoryLog; name: string },
) {
  return drainOrphanedSlots({
    store,
    key: "board",
    owner: "q",
    own: "q-0",
    active: () => true,
    online: () => a.sync.status === "live",
    channel: name,
    order: a.order,
    open: (pending) =>
      createSynchronizer({
        log: log.handle(),
        model: board,
        pending,
        compaction: false,
        snapshots: false,
      }),
  });
}

/** The commands of `log`'s entries, in log order: `name:argument`. */
async function commandsInLog(log: MemoryLog): Promise<string[]> {
  const reader = log.handle();
  const out: string[] = [];
  for await (const e of reader.read(1, (await reader.info()).latestRevision)) {
    const entry = JSON.parse(new TextDecoder().decode(e.data)) as {
      commands?: Array<{ name: string; args: { title?: string; card?: string } }>;
    };
    for (const c of entry.commands ?? []) out.push(`${c.name}:${c.args.title ?? c.args.card}`);
  }
  return out;
}

it("the drain of a closed tab's slot does not push it ahead of the leading tab's earlier edits", async () => {
  const log = new MemoryLog();
  const store = durable(new MemoryPendingStore());
  const name = `drain-order-${Date.now()}`;
  const t = Date.now();
  // A closed tab's slot: d0 queued before the leader's edit, d1 after it.
  const dead = await store.open("board", "q-1");
  const rec = (seq: number, card: string, at: number): PendingRecord => ({
    format: 1,
    seq,
    origin: "dead-tab-origin",
    kind: "update",
    name: "add",
    args: { card },
    queuedAt: at,
    mv: 1,
  });
  await dead.put(rec(1, "d0", t - 3_000));
  await dead.put(rec(2, "d1", t - 1_000));
  await dead.close();

  log.setOffline(true);
  const a = await openTab(log, store, name, "0");
  await until(() => a.sync.status !== "live");
  // The leader's edit, queued between the two (its queuedAt is now; set the dead tab's around it).
  const edit = a.sync.update("add", { card: "a1" });
  await edit.queued;
  const a1At = a.sync.pending[0]!.queuedAt;
  expect(a1At).toBeGreaterThan(t - 1_000 - 1); // d1 must come after it: rewrite d1
  const again = await store.open("board", "q-1");
  await again.put(rec(2, "d1", a1At + 1));
  await again.close();

  const stop = drainAs(a, { store, log, name });
  try {
    await until(() => a.sync.pendingInOtherTabs.length === 2); // the drain's report of the slot
    log.setOffline(false);
    await edit;
    await until(async () => (await commandsInLog(log)).length === 3);
    expect(await commandsInLog(log)).toEqual(["add:d0", "add:a1", "add:d1"]);
  } finally {
    stop();
    a.stop();
    await a.sync.close();
  }
});

it("a tab reports no update set aside for another log: no tab shows it or waits for it", async () => {
  const log = new MemoryLog();
  const storeF = new MemoryPendingStore();
  const name = `other-log-${Date.now()}`;
  // F queues two edits offline, for this log, and closes.
  const f0 = await createSynchronizer({
    log: log.handle(),
    model: board,
    compaction: false,
    pending: pendingQueue({ store: storeF, owner: "q-f" }),
  });
  await f0.update("add", { card: "seed" });
  log.setOffline(true);
  await until(() => f0.status !== "live");
  const queued = [f0.update("add", { card: "x" }), f0.update("add", { card: "y" })];
  await Promise.all(queued.map((p) => p.queued));
  await f0.close();
  await Promise.allSettled(queued);
  log.setOffline(false);
  log.recreate(); // the stream deleted and created again: they are for a log that is gone

  const f = await openTab(log, storeF, name, "f");
  await until(() => f.sync.pending.length === 2 && f.sync.pending.every((p) => p.otherLog));
  const g = await openTab(log, new MemoryPendingStore(), name, "g");
  await new Promise((r) => setTimeout(r, 100)); // the tabs' hellos and reports
  expect(g.sync.pendingInOtherTabs).toEqual([]);
  expect(g.sync.optimisticState.cards).toEqual([]);
  // G's new edit has nothing in front of it.
  const key = { queuedAt: Date.now(), origin: "g-origin", id: 1 };
  expect(
    g.order.of("q-g").before(
      key,
      () => false,
      (o) => g.sync.appliedSeq(o),
    ),
  ).toBeUndefined();
  await g.sync.update("add", { card: "g" });
  f.stop();
  g.stop();
  await Promise.all([f.sync.close(), g.sync.close()]);
});

// The re-check of the drain's order: two closed tabs' slots were drained one after the other, so
// the first slot's updates waited 10 s for the second's earlier ones, then went: B's take of C's
// card was refused (the card not there yet) and C's older title overwrote B's newer one.
it("the slots of several closed tabs drain together, in the order their edits were made", async () => {
  const log = new MemoryLog();
  const store = durable(new MemoryPendingStore());
  const name = `drain-two-${Date.now()}`;
  const t = Date.now() - 10_000;
  const put = async (
    owner: string,
    origin: string,
    ...ops: Array<[number, string, object, number]>
  ) => {
    const q = await store.open("board", owner);
    for (const [seq, command, args, at] of ops) {
      await q.put({
        format: 1,
        seq,
        origin,
        kind: "update",
        name: command,
        args,
        queuedAt: at,
        mv: 1,
      });
    }
    await q.close();
  };
  // B (slot 1, drained first before): takes C's card, then titles; C (slot 2) adds, titles.
  await put(
    "q-1",
    "tab-b",
    [1, "take", { card: "c1" }, t + 2],
    [2, "title", { title: "B" }, t + 4],
  );
  await put("q-2", "tab-c", [1, "add", { card: "c1" }, t + 1], [2, "title", { title: "C" }, t + 3]);
  const a = await openTab(log, store, name, "0");
  const stop = drainAs(a, { store, log, name });
  try {
    // The four updates in (after the genesis), or some refused and the rest in.
    await until(() => a.sync.pendingInOtherTabs.length === 0 && a.sync.revision >= 3, 30_000);
    await until(async () => (await commandsInLog(log)).length === 4, 5_000).catch(() => undefined);
    expect(await commandsInLog(log)).toEqual(["add:c1", "take:c1", "title:C", "title:B"]);
    expect(a.sync.state).toEqual({ cards: [], title: "B" });
  } finally {
    stop();
    a.stop();
    await a.sync.close();
  }
}, 60_000);
