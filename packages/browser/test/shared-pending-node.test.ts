import {
  createSynchronizer,
  defineModel,
  encodeEntry,
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

it("sends and re-runs what changed only: N edits queued one by one in a tab cost O(N) in another tab", async () => {
  // A trial: with two tabs open and the server stopped, each edit made its tab post its whole
  // pending list, and the other tab checked and re-ran every item of it: N edits cost O(N²)
  // (10,000 took 121 s to queue, the other tab froze for 56 s at a time). A tab now posts what
  // changed, and the other tab runs the items added on top of the view it already had.
  let runs = 0;
  const counted = defineModel({
    name: "counted",
    state: z.object({ cards: z.array(z.string()) }),
    initial: { cards: [] },
    commands: {
      add: {
        args: z.object({ card: z.string() }),
        apply: (d, { card }) => {
          runs += 1;
          d.cards.push(card);
        },
      },
    },
  });
  const log = new MemoryLog();
  const openCounted = (owner: string) =>
    createSynchronizer({
      log: log.handle(),
      model: counted,
      snapshots: false,
      compaction: false,
      pending: pendingQueue({ store: new MemoryPendingStore(), owner }),
    });
  const a = await openCounted("tab-a");
  const b = await openCounted("tab-b");
  const name = `shared-delta-${Date.now()}`;
  let posted = 0;
  const watch = new BroadcastChannel(`${name}:pending`);
  watch.onmessage = (e: MessageEvent) => {
    const m = e.data as { ops?: unknown[]; add?: unknown[] };
    posted += (m.ops?.length ?? 0) + (m.add?.length ?? 0);
  };
  const sharedA = sharePendingAcrossTabs(a, counted, name, "a", "queue-a");
  const sharedB = sharePendingAcrossTabs(b, counted, name, "b", "queue-b");
  let seen = 0;
  const stopB = sharedB.sync.subscribe((s) => void (seen = s.cards.length), { optimistic: true });
  log.setOffline(true);
  const N = 500;
  const runsBefore = runs;
  for (let i = 0; i < N; i++) {
    await sharedA.sync.update("add", { card: `c${i}` }).queued;
    // One task an edit, as in a page (an IndexedDB store answers in a later task).
    await new Promise((r) => setTimeout(r, 0));
  }
  const deadline = Date.now() + 20_000;
  while (seen < N && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  expect(seen).toBe(N);
  expect(sharedB.sync.optimisticState.cards).toEqual(Array.from({ length: N }, (_, i) => `c${i}`));
  // Each edit runs once in tab A's own view and once in tab B's (before: ~N²/2 in tab B), and
  // is posted about once (before: ~N²/2 items posted).
  expect(runs - runsBefore).toBeLessThanOrEqual(4 * N);
  expect(posted).toBeLessThanOrEqual(4 * N);
  // A tab that joins now gets the whole list, and shows the same.
  const c = await openCounted("tab-c");
  const sharedC = sharePendingAcrossTabs(c, counted, name, "c", "queue-c");
  const until = Date.now() + 5_000;
  while (sharedC.sync.optimisticState.cards.length < N && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 10));
  }
  expect(sharedC.sync.optimisticState.cards).toHaveLength(N);
  // Once A's edits are confirmed, they leave the other tabs' previews (shown once, not twice).
  log.setOffline(false);
  await a.flush();
  const drained = Date.now() + 20_000;
  while (Date.now() < drained) {
    if (
      b.revision >= a.revision &&
      sharedB.sync.optimisticState.cards.length === N &&
      sharedC.sync.optimisticState.cards.length === N &&
      c.revision >= a.revision
    ) {
      break;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  expect(sharedB.sync.optimisticState.cards).toHaveLength(N);
  expect(sharedC.sync.optimisticState.cards).toHaveLength(N);
  stopB();
  watch.close();
  sharedA.stop();
  sharedB.stop();
  sharedC.stop();
  await Promise.all([a.close(), b.close(), c.close()]);
});

it("keeps a closed tab's stored edits in the other tabs' views until its queue is taken over", async () => {
  // A trial: the leading tab closed while offline; its queued edits vanished from the other
  // tab's view (its last report said it had none) until that tab took its queue over, seconds
  // later. They are stored: the tab that takes the queue over shows them, its report replacing
  // the closed tab's. Those held in memory only leave with the tab.
  // A memory store whose queues say they are durable (as IndexedDB's do).
  class StoredPendingStore extends MemoryPendingStore {
    override async open(...args: Parameters<MemoryPendingStore["open"]>) {
      const queue = await super.open(...args);
      return new Proxy(queue, {
        get: (target, prop) => (prop === "durable" ? true : Reflect.get(target, prop, target)),
      });
    }
  }
  const log = new MemoryLog();
  const store = new StoredPendingStore();
  const a = await createSynchronizer({
    log: log.handle(),
    model: board,
    snapshots: false,
    compaction: false,
    pending: pendingQueue({ store, owner: "tab-a" }),
  });
  const b = await open(log, "tab-b");
  const name = `shared-close-${Date.now()}`;
  const sharedA = sharePendingAcrossTabs(a, board, name, "a", "queue-a");
  const sharedB = sharePendingAcrossTabs(b, board, name, "b", "queue-b");
  log.setOffline(true);
  for (const card of ["a1", "a2"]) await a.update("add", { card }).queued;
  const shows = async (cards: string[]) => {
    const deadline = Date.now() + 5_000;
    while (Date.now() < deadline) {
      if (JSON.stringify(sharedB.sync.optimisticState.cards) === JSON.stringify(cards)) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(sharedB.sync.optimisticState.cards).toEqual(cards);
  };
  await shows(["a1", "a2"]);
  sharedA.stop();
  await new Promise((r) => setTimeout(r, 50));
  expect(sharedB.sync.optimisticState.cards).toEqual(["a1", "a2"]);
  // The tab that takes queue-a over reports its edits: shown once.
  const taker = new BroadcastChannel(`${name}:pending`);
  const ops = [
    { id: 1, c: "add", a: { card: "a1" }, at: 1 },
    { id: 2, c: "add", a: { card: "a2" }, at: 2 },
    { id: 3, c: "add", a: { card: "a3" }, at: 3 },
  ];
  taker.postMessage({ t: "pending", from: "a2", q: "queue-a", seq: 1, revision: b.revision, ops });
  await shows(["a1", "a2", "a3"]);
  // A step missed (seq 3 after 1): ignored, and the whole list asked of that tab.
  const asked = new Promise<unknown>((resolve) => {
    taker.onmessage = (e: MessageEvent) => {
      if ((e.data as { to?: string }).to === "a2") resolve(e.data);
    };
  });
  const add = [{ id: 4, c: "add", a: { card: "a4" }, at: 4 }];
  taker.postMessage({
    t: "delta",
    from: "a2",
    q: "queue-a",
    seq: 3,
    revision: b.revision,
    add,
    remove: [],
  });
  expect(await asked).toEqual({ t: "hello", to: "a2" });
  expect(sharedB.sync.optimisticState.cards).toEqual(["a1", "a2", "a3"]);
  // The next step applies: an item removed, one added.
  const next = { t: "delta", from: "a2", q: "queue-a", revision: b.revision };
  taker.postMessage({ ...next, seq: 2, add, remove: [1] });
  await shows(["a2", "a3", "a4"]);
  taker.close();
  sharedB.stop();
  await a.close().catch(() => undefined);
  await b.close();
});

it("keeps another tab's edits in view while unrelated entries arrive, and shows each once when it lands", async () => {
  // A trial (three tabs, a writer busy): another tab's edits vanished from the view for up to a
  // second whenever this tab's revision passed the one that tab had last reported, whether the
  // new entries held them or not. Now each edit is left out exactly when the confirmed state
  // includes it: its origin and id, against the table of applied origins.
  const log = new MemoryLog();
  const b = await open(log, "tab-b");
  const writer = await createSynchronizer({
    log: log.handle(),
    model: board,
    snapshots: false,
    compaction: false,
  });
  const name = `shared-exact-${Date.now()}`;
  const sharedB = sharePendingAcrossTabs(b, board, name, "b", "queue-b");
  const tabC = new BroadcastChannel(`${name}:pending`);
  const ops = [
    { id: 5, o: "origin-c", c: "add", a: { card: "c1" }, at: 1 },
    { id: 6, o: "origin-c", c: "add", a: { card: "c2" }, at: 2 },
  ];
  tabC.postMessage({ t: "pending", from: "c", q: "queue-c", seq: 1, revision: b.revision, ops });
  const cards = () => [...sharedB.sync.optimisticState.cards];
  const deadline = Date.now() + 5_000;
  while (cards().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  expect(cards()).toEqual(["c1", "c2"]);
  // Another writer's entries: B's revision passes C's report; C's edits are still pending.
  await writer.updateUnconditionally("add", { card: "w1" });
  await b.waitFor(writer.revision);
  expect(cards()).toEqual(["w1", "c1", "c2"]); // before: ["w1"]
  // Listed as another tab's pending edits, for a page to mark (stop 25's trial: a tab counted
  // only its own); a replica that shares no tabs lists none.
  expect(sharedB.sync.pendingInOtherTabs).toEqual([
    { tab: "c", command: "add", args: { card: "c1" }, queuedAt: 1 },
    { tab: "c", command: "add", args: { card: "c2" }, queuedAt: 2 },
  ]);
  expect(b.pendingInOtherTabs).toEqual([]);
  // C's queue pushes its two edits in one entry (origin [origin-c, 6]): B shows each once.
  const base = (await log.info()).latestRevision;
  log.injectRaw(
    encodeEntry({
      v: 2,
      kind: "update",
      base,
      ts: 3,
      seed: 1,
      client: "c",
      patches: [
        { op: "add", path: ["cards", 1], value: "c1" },
        { op: "add", path: ["cards", 2], value: "c2" },
      ],
      origin: ["origin-c", 6],
    }),
    "c-6",
  );
  await b.waitFor(base + 1);
  expect(b.state.cards).toEqual(["w1", "c1", "c2"]);
  expect(cards()).toEqual(["w1", "c1", "c2"]);
  expect(sharedB.sync.pendingInOtherTabs).toEqual([]); // landed: no longer pending
  expect(b.appliedSeq("origin-c")).toBe(6);
  expect(b.appliedSeq("nobody")).toBeUndefined();
  expect(() => b.appliedSeq(5 as never)).toThrow(/origin must be a string/);
  tabC.close();
  sharedB.stop();
  await Promise.all([b.close(), writer.close()]);
});

it("keeps another tab's edits in view when that tab drops them before this tab read their entry", async () => {
  // A trial (two tabs reconnecting with pending edits): in the follower tab the leader's edits
  // vanished for one view (16-148 ms on screen) and came back as committed. The leader drops an
  // edit from its list once its confirmed state includes it, and its report reached the
  // follower before the entry did (another channel). Now an edit its tab no longer reports
  // stays in view until this tab's revision reaches the one that report carried.
  const log = new MemoryLog();
  const b = await open(log, "tab-b");
  const name = `shared-leaving-${Date.now()}`;
  const sharedB = sharePendingAcrossTabs(b, board, name, "b", "queue-b");
  const tabC = new BroadcastChannel(`${name}:pending`);
  const cards = () => [...sharedB.sync.optimisticState.cards];
  const until = async (want: string[]) => {
    const deadline = Date.now() + 5_000;
    while (JSON.stringify(cards()) !== JSON.stringify(want) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(cards()).toEqual(want);
  };
  const r = b.revision;
  const ops = [
    { id: 5, o: "origin-c", c: "add", a: { card: "c1" }, at: 1 },
    { id: 6, o: "origin-c", c: "add", a: { card: "c2" }, at: 2 },
    { id: 7, o: "origin-c", c: "add", a: { card: "c3" }, at: 3 },
  ];
  tabC.postMessage({ t: "pending", from: "c", q: "queue-c", seq: 1, revision: r, ops });
  await until(["c1", "c2", "c3"]);
  // C committed c1 and c2 at r + 1 and refused c3 there: its list is empty at revision r + 1.
  tabC.postMessage({
    t: "delta",
    from: "c",
    q: "queue-c",
    seq: 2,
    revision: r + 1,
    add: [],
    remove: [5, 6, 7],
  });
  await new Promise((resolve) => setTimeout(resolve, 100));
  expect(cards()).toEqual(["c1", "c2", "c3"]); // before: [] until the entry came
  log.injectRaw(
    encodeEntry({
      v: 2,
      kind: "update",
      base: r,
      ts: 3,
      seed: 1,
      client: "c",
      patches: [
        { op: "add", path: ["cards", 0], value: "c1" },
        { op: "add", path: ["cards", 1], value: "c2" },
      ],
      origin: ["origin-c", 6],
    }),
    "c-6",
  );
  await b.waitFor(r + 1);
  // Each committed edit once; the refused one gone, now that B stands where C did.
  expect(cards()).toEqual(["c1", "c2"]);
  // An edit dropped by a report at a revision this tab has reached leaves at once.
  const c4 = { id: 8, o: "origin-c", c: "add", a: { card: "c4" }, at: 4 };
  tabC.postMessage({ t: "pending", from: "c", q: "queue-c", seq: 3, revision: r + 1, ops: [c4] });
  await until(["c1", "c2", "c4"]);
  tabC.postMessage({
    t: "delta",
    from: "c",
    q: "queue-c",
    seq: 4,
    revision: r + 1,
    add: [],
    remove: [8],
  });
  await until(["c1", "c2"]);
  tabC.close();
  sharedB.stop();
  await b.close();
});

it("leaves out another tab's command whose arguments make this tab's schema throw, showing the rest", async () => {
  // Tabs may run different builds of the app (a deploy between reloads): the arguments another
  // tab reports are checked with this tab's schema, whose refinement threw out of the channel's
  // handler, and the report's other edits never showed (nor any later report's).
  const picky = defineModel({
    name: "board",
    state: z.object({ cards: z.array(z.string()) }),
    initial: { cards: [] },
    commands: {
      add: {
        args: z.object({
          card: z.string().refine((c) => {
            if (c === "boom") throw new Error("boom");
            return true;
          }),
        }),
        apply: (d, { card }) => void d.cards.push(card),
      },
    },
  });
  const log = new MemoryLog();
  const a = await createSynchronizer({
    log: log.handle(),
    model: picky,
    snapshots: false,
    compaction: false,
    pending: pendingQueue({ store: new MemoryPendingStore(), owner: "tab-a" }),
  });
  const name = `shared-throws-${Date.now()}`;
  const errors: unknown[] = [];
  const onError = (e: unknown) => errors.push(e);
  process.on("uncaughtException", onError);
  const sharedA = sharePendingAcrossTabs(a, picky, name, "a");
  const tabB = new BroadcastChannel(`${name}:pending`);
  const ops = [
    { c: "add", a: { card: "boom" }, at: 1 },
    { c: "add", a: { card: "b1" }, at: 2 },
  ];
  tabB.postMessage({ t: "pending", from: "b", revision: a.revision, ops });
  const deadline = Date.now() + 2_000;
  while (sharedA.sync.optimisticState.cards.length === 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
  }
  process.off("uncaughtException", onError);
  expect(sharedA.sync.optimisticState.cards).toEqual(["b1"]);
  expect(errors).toEqual([]);
  tabB.close();
  sharedA.stop();
  await a.close();
});
