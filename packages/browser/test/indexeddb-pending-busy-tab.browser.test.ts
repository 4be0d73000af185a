import { afterEach, expect, it } from "vitest";
import { IndexedDbPendingStore } from "../src/indexeddb-pending-store.js";
import { dropDatabase, uniqueDatabase } from "./idb-helpers.js";

// A browser trial: 2,000 offline edits in one tab, then a reload. The reloaded tab's queue hit
// the 5 s wait on IndexedDB and ran in memory (its edits not durable) while the other tab was
// busy for seconds. Here that other tab is a worker (a thread of its own) that loads its queue
// and is busy for 7 s while the load's transaction is under way.

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanup.length > 0) await cleanup.pop()!();
});

const record = (seq: number) => ({
  format: 1 as const,
  seq,
  kind: "update" as const,
  name: "addCard",
  args: { id: `c${seq}`, listId: "todo", title: `card ${seq}` },
  queuedAt: seq,
  mv: 1,
});

/** `owner`'s queue of `key` with `n` records, written and closed. */
async function fill(databaseName: string, key: string, owner: string, n: number): Promise<void> {
  const store = new IndexedDbPendingStore({ databaseName });
  const queue = await store.open(key, owner);
  await Promise.all(Array.from({ length: n }, (_, i) => queue.put(record(i + 1))));
  await queue.close();
  await store.close();
}

interface OtherTab {
  /** What happened, in order: "busy", then "loaded". */
  readonly events: string[];
  /** What its load gave. */
  readonly loaded: Promise<{ loaded: number; durable: boolean; warnings: string[] }>;
}

/** A database with the queues of two tabs, and the second tab loading its queue, busy 7 s. */
async function busyOtherTab(): Promise<{ databaseName: string; other: OtherTab }> {
  const databaseName = uniqueDatabase("busy-tab");
  cleanup.push(() => dropDatabase(databaseName));
  await fill(databaseName, "board", "tab-0", 2_000);
  await fill(databaseName, "board", "tab-1", 10);
  const worker = new Worker(new URL("./support/busy-load-worker.ts", import.meta.url), {
    type: "module",
  });
  cleanup.push(async () => worker.terminate());
  const events: string[] = [];
  const loaded = new Promise<any>((resolve) => {
    worker.onmessage = (e: MessageEvent) => {
      events.push(e.data === "busy" ? "busy" : "loaded");
      if (e.data !== "busy") resolve(e.data);
    };
  });
  worker.postMessage({ databaseName, key: "board", owner: "tab-1", busyMs: 7_000 });
  await expect.poll(() => events, { timeout: 10_000 }).toContain("busy");
  return { databaseName, other: { events, loaded } };
}

// Opening and loading a queue took write transactions over both stores, so they waited for
// every transaction another tab had started over them, a load too: a queue's open and load
// only read (unless there is something to repair).
it("opens a queue of 2,000 records durable while another tab, busy, is loading its queue", async () => {
  const { databaseName, other } = await busyOtherTab();
  const warnings: unknown[] = [];
  const store = new IndexedDbPendingStore({ databaseName, onWarning: (w) => warnings.push(w) });
  cleanup.push(() => store.close());
  const queue = await store.open("board", "tab-0");
  const loaded = await queue.load();
  const otherWhenLoaded = [...other.events];
  await other.loaded;

  expect(warnings).toEqual([]);
  expect(queue.durable).toBe(true);
  expect(loaded.records).toHaveLength(2_000);
  expect(loaded.nextSeq).toBe(2_001);
  expect(otherWhenLoaded).toEqual(["busy"]); // it did not wait for the other tab
  await queue.close();
}, 30_000);

// The wait on IndexedDB was one 5 s timer: a tab whose own thread was busy past it (re-applying
// a long queue) gave up on an answer already there, and ran its queue in memory.
it("a tab busy for longer than the wait while its queue loads keeps it durable", async () => {
  const { other } = await busyOtherTab();
  expect(await other.loaded).toEqual({ loaded: 10, durable: true, warnings: [] });
}, 30_000);
