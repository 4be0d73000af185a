import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  type PendingQueueSetup,
  type PendingRecord,
  type PendingStore,
  type StateSyncError,
} from "@statesync/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod/v4";
import { drainOrphanedSlots, type OrphanDrainOptions } from "../src/tabs/orphans.js";
import { durable } from "./support/durable-store.js";

/**
 * The leading tab drains the queues dead tabs left (docs/offline.md, "Tabs"). A slot whose
 * updates were queued for another log is set aside by the replica that opens it (docs/offline.md,
 * "One log"): the drain goes on with the other slots, and does not open that slot again, and
 * report it again, every round while its records stay the same.
 */
const board = defineModel({
  name: "board",
  state: z.object({ cards: z.array(z.string()) }),
  initial: { cards: [] },
  commands: {
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
  },
});

const record = (seq: number, card: string, logIdentity?: string): PendingRecord => ({
  format: 1,
  seq,
  kind: "update",
  name: "add",
  args: { card },
  queuedAt: Date.now(),
  mv: 1,
  ...(logIdentity ? { logIdentity } : {}),
});

async function put(store: PendingStore, owner: string, ...records: PendingRecord[]) {
  const q = await store.open("board", owner);
  for (const r of records) await q.put(r);
  await q.close();
}

/** This tab's drain (`tab-0`, leading) of the board's slots in `store`, with `more` options. */
function drainBoard(
  store: PendingStore,
  more: Omit<OrphanDrainOptions, "store" | "key" | "owner" | "own" | "active">,
): () => void {
  return drainOrphanedSlots({
    store,
    key: "board",
    owner: "tab",
    own: "tab-0",
    active: () => true,
    ...more,
  });
}

/** A drained slot's replica on `log`, compacting nothing. */
const replicaOn = (log: MemoryLog) => async (pending: PendingQueueSetup) =>
  createSynchronizer({ log: log.handle(), model: board, pending, compaction: false });

afterEach(() => {
  vi.useRealTimers();
});

describe("drainOrphanedSlots and updates of another log", () => {
  it("goes on past a slot set aside for another log, and leaves it alone while it does not change", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const log = new MemoryLog();
    const store = durable(new MemoryPendingStore());
    await put(store, "tab-1", record(1, "elsewhere", "memory-0-a-log-that-is-gone"));
    await put(store, "tab-2", record(1, "orphan"));
    const errors: StateSyncError[] = [];
    let opened = 0;
    const stop = drainBoard(store, {
      open: async (pending) => {
        opened += 1;
        return createSynchronizer({
          log: log.handle(),
          model: board,
          pending,
          compaction: false,
          onError: (e) => errors.push(e),
        });
      },
    });
    try {
      const reader = log.handle();
      const latest = async () => (await reader.info()).latestRevision;
      for (let i = 0; i < 200 && (await latest()) < 2; i++) await vi.advanceTimersByTimeAsync(50);
      expect(await latest()).toBe(2); // genesis, and tab-2's update: pushed in the first round
      expect(errors.filter((e) => e.code === "LOG_REPLACED")).toHaveLength(1);
      const openedAfterFirst = opened;
      await vi.advanceTimersByTimeAsync(25_000); // two more rounds
      expect(opened).toBe(openedAfterFirst); // tab-1 not opened again
      expect(errors.filter((e) => e.code === "LOG_REPLACED")).toHaveLength(1);
      const q = await store.open("board", "tab-1");
      expect((await q.load()).records.map((r) => r.args)).toEqual([{ card: "elsewhere" }]);
      await q.close();
    } finally {
      stop();
    }
  });
});

// Found by a fresh-eyes trial (stop 26): with every tab closed while offline and one reopened,
// the leading tab's drain held another slot while it waited for the server, so the next tab took
// a third slot, and the held slot's edits showed nowhere until the server was back.
describe("drainOrphanedSlots while the server is away", () => {
  it("shows a slot's stored updates to every tab and leaves the slot free; pushes once online", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const log = new MemoryLog();
    const store = durable(new MemoryPendingStore());
    await put(store, "tab-1", record(1, "orphan 1"), record(2, "orphan 2"));
    const reports: Array<{ q?: string; ops: Array<{ c: string; a: unknown; id: number }> }> = [];
    const channel = `orphans-${Date.now()}`;
    const listener = new BroadcastChannel(`${channel}:pending`);
    listener.onmessage = (e: MessageEvent) => reports.push(e.data);
    let online = false;
    const stop = drainBoard(store, {
      online: () => online,
      channel,
      open: replicaOn(log),
    });
    try {
      for (let i = 0; i < 100 && reports.length === 0; i++) await vi.advanceTimersByTimeAsync(50);
      expect(reports[0]).toMatchObject({
        q: "tab-1",
        ops: [
          { id: 1, c: "add", a: { card: "orphan 1" } },
          { id: 2, c: "add", a: { card: "orphan 2" } },
        ],
      });
      // Not held: a tab opening now takes the slot (and shows the edits itself).
      const q = await store.open("board", "tab-1");
      await q.close();
      expect((await log.info()).latestRevision).toBe(0); // nothing pushed offline
      online = true;
      const reader = log.handle();
      for (let i = 0; i < 400 && (await reader.info()).latestRevision < 2; i++) {
        await vi.advanceTimersByTimeAsync(50);
      }
      // Genesis, and the two updates in one entry (a queue pushes a chunk as one).
      expect((await reader.info()).latestRevision).toBe(2);
      for (let i = 0; i < 100 && reports.at(-1)!.ops.length > 0; i++) {
        await vi.advanceTimersByTimeAsync(50);
      }
      expect(reports.at(-1)).toMatchObject({ q: "tab-1", ops: [] }); // pushed: withdrawn
    } finally {
      stop();
      listener.close();
    }
  });
});

// Found by an adversarial trial: a closed tab's edits, shown by the drain while offline, were
// then cleared through the store (a user logs out, docs/offline.md): the next rounds found the
// slot empty and said nothing, so every tab showed the cleared edits as "not sent yet" for as
// long as it stayed open, online too.
describe("drainOrphanedSlots and a slot emptied by someone else", () => {
  it("withdraws what it showed of a slot once the slot is found empty", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const store = durable(new MemoryPendingStore());
    await put(store, "tab-1", record(1, "orphan 1"), record(2, "orphan 2"));
    await put(store, "tab-2"); // a slot never shown, found empty: nothing to withdraw
    const reports: Array<{ q?: string; ops: unknown[]; revision: number }> = [];
    const channel = `orphans-cleared-${Date.now()}`;
    const listener = new BroadcastChannel(`${channel}:pending`);
    listener.onmessage = (e: MessageEvent) => reports.push(e.data);
    const stop = drainBoard(store, {
      online: () => false,
      channel,
      revision: () => 7,
      open: () => Promise.reject(new Error("offline: never opened")),
    });
    try {
      for (let i = 0; i < 100 && reports.length === 0; i++) await vi.advanceTimersByTimeAsync(50);
      expect(reports).toMatchObject([{ q: "tab-1", ops: [{ id: 1 }, { id: 2 }] }]);
      const q = await store.open("board", "tab-1");
      await q.clear(); // the app clears the queues of the closed tabs (a logout)
      await q.close();
      await vi.advanceTimersByTimeAsync(10_000); // the next round
      for (let i = 0; i < 100 && reports.length === 1; i++) await vi.advanceTimersByTimeAsync(50);
      expect(reports.slice(1)).toMatchObject([{ q: "tab-1", ops: [], revision: 7 }]);
      await vi.advanceTimersByTimeAsync(20_000); // said once, not every round
      expect(reports).toHaveLength(2);
    } finally {
      stop();
      listener.close();
    }
  });
});

// Stop 34's re-check: a new leading tab reported a dead slot's records before its drain found
// them bound to another log: the other tabs showed them and held their pushes for a moment.
describe("drainOrphanedSlots and the log's identity", () => {
  it("reports no record bound to another log, nor waits for it", async () => {
    const log = new MemoryLog();
    const store = durable(new MemoryPendingStore());
    await put(store, "tab-1", record(1, "elsewhere", "memory-0-a-log-that-is-gone"));
    await put(store, "tab-2", record(1, "orphan"));
    const channel = `orphans-identity-${Date.now()}`;
    const reports: Array<{ q?: string; ops: Array<{ a: unknown }> }> = [];
    const listener = new BroadcastChannel(`${channel}:pending`);
    listener.onmessage = (e: MessageEvent) => reports.push(e.data);
    const reader = log.handle();
    const stop = drainBoard(store, {
      channel,
      identity: async () => (await reader.info()).identity,
      open: replicaOn(log),
    });
    try {
      const end = Date.now() + 15_000;
      while ((await reader.info()).latestRevision < 2 && Date.now() < end) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await reader.info()).latestRevision).toBe(2); // tab-2's update pushed
      // The channel delivers later than the log: wait for tab-2's report, and its last one.
      const reported = () => reports.some((r) => r.q === "tab-2" && r.ops.length === 1);
      while (!reported() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      expect(reported()).toBe(true);
      await new Promise((r) => setTimeout(r, 200));
      const shown = reports.filter((r) => r.q === "tab-1").flatMap((r) => r.ops);
      expect(shown).toEqual([]); // tab-1's record, of another log, never shown
    } finally {
      stop();
      listener.close();
    }
  }, 30_000);
});

// A new user's trial: one tab, an offline session, and the pending database then held a row for
// each of the 32 slots, all empty: the drain opened every slot to look at it, and opening a slot
// creates its queue. It now asks the store which slots have a queue (`owners`, read only).
describe("drainOrphanedSlots looks without creating queues", () => {
  /** `store` (durable), recording the owners opened through it. */
  function recording(store: PendingStore) {
    const base = durable(store);
    const opened: string[] = [];
    const open: PendingStore["open"] = (key, owner) => {
      opened.push(owner);
      return base.open(key, owner);
    };
    return { store: { ...base, open }, opened };
  }

  /** Runs the drain of `store` until tab-3's update (a dead tab's) is on the log, then a round more. */
  async function drainTab3(store: PendingStore) {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const log = new MemoryLog();
    const stop = drainBoard(store, {
      open: replicaOn(log),
    });
    try {
      const reader = log.handle();
      for (let i = 0; i < 400 && (await reader.info()).latestRevision < 2; i++) {
        await vi.advanceTimersByTimeAsync(50);
      }
      // Genesis and tab-3's update: the round looked at every slot before it pushed.
      expect((await reader.info()).latestRevision).toBe(2);
      await vi.advanceTimersByTimeAsync(10_000); // and the next round
    } finally {
      stop();
    }
  }

  it("opens only the slots that have a queue, and leaves no queue for the others", async () => {
    const memory = new MemoryPendingStore();
    const { store, opened } = recording(memory);
    const own = await store.open("board", "tab-0"); // this tab's slot, held
    await put(store, "tab-3", record(1, "orphan"));
    opened.length = 0;
    await drainTab3(store);
    await own.close();
    expect(new Set(opened)).toEqual(new Set(["tab-3"])); // before: every slot but tab-0
    expect((await memory.owners("board")).sort()).toEqual(["tab-0", "tab-3"]); // before: all 32
  });

  it("a store without owners: looks at every slot, opening each, and still drains", async () => {
    const memory = new MemoryPendingStore();
    const { store, opened } = recording({ open: (key, owner) => memory.open(key, owner) });
    expect(store.owners).toBeUndefined();
    await put(store, "tab-3", record(1, "orphan"));
    opened.length = 0;
    await drainTab3(store);
    expect(new Set(opened).size).toBe(31); // every slot but this tab's
  });
});
