import { IndexedDbPendingStore, isStateSyncError } from "@statesync/browser";
import { runPendingStoreConformance } from "@statesync/core/testing";
import { openDB } from "idb";
import { expect, it } from "vitest";
import { dropDatabase, uniqueDatabase } from "./idb-helpers.js";

// The same suite as MemoryPendingStore and FilePendingStore, on Chromium's IndexedDB, with the
// queue locks as Web Locks.
runPendingStoreConformance("IndexedDbPendingStore", async () => {
  const databaseName = uniqueDatabase("pending");
  const warnings: unknown[] = [];
  let store = new IndexedDbPendingStore({ databaseName, onWarning: (w) => warnings.push(w) });
  const others: IndexedDbPendingStore[] = [];
  const releases: Array<() => void> = [];
  const corrupt = async (key: string, owner: string, seq: number) => {
    const db = await openDB(databaseName);
    const row = await db.get("records", [key, owner, seq]);
    await db.put("records", { ...row, record: { ...row.record, seq: "broken" } });
    db.close();
  };
  return {
    store,
    durable: true,
    reopen: async () => {
      const other = new IndexedDbPendingStore({ databaseName });
      others.push(other);
      return other;
    },
    crash: async () => {
      store = store.crashed();
      others.push(store);
      return store;
    },
    corrupt,
    // Its delete aborts the transaction it runs in (as a quota error or a force-closed
    // connection does), until released.
    corruptImmovable: async (key, owner, seq) => {
      await corrupt(key, owner, seq);
      const release = failDeletesOf([key, owner, seq]);
      releases.push(release);
      return async () => release();
    },
    teardown: async () => {
      for (const release of releases) release();
      for (const o of others) await o.close();
      expect(warnings).toEqual([]);
      await dropDatabase(databaseName);
    },
  };
});

/**
 * Makes every IndexedDB delete of the record under `key` abort its transaction once the request
 * answered (as a commit refused for quota, or a connection force-closed meanwhile, aborts it: the
 * delete is undone); returns what undoes it. A forced failure: IndexedDB has no way to refuse
 * one record's delete.
 */
function failDeletesOf(key: readonly [string, string, number]): () => void {
  const original = IDBObjectStore.prototype.delete;
  const jammed = (k: unknown) =>
    Array.isArray(k) && k.length === 3 && k.every((part, i) => part === key[i]);
  IDBObjectStore.prototype.delete = function (this: IDBObjectStore, query) {
    const request = original.call(this, query);
    if (jammed(query)) {
      const tx = this.transaction;
      request.addEventListener("success", () => tx.abort());
    }
    return request;
  };
  return () => {
    IDBObjectStore.prototype.delete = original;
  };
}

it("runs in memory, not durable, where IndexedDB cannot be opened, and warns once", async () => {
  const warnings: unknown[] = [];
  const original = Object.getOwnPropertyDescriptor(globalThis, "indexedDB")!;
  Object.defineProperty(globalThis, "indexedDB", { value: undefined, configurable: true });
  try {
    const store = new IndexedDbPendingStore({ onWarning: (w) => warnings.push(w) });
    const q = await store.open("k", "app");
    expect(q.durable).toBe(false);
    await q.put({ format: 1, seq: 1, kind: "update", name: "add", args: {}, queuedAt: 1, mv: 1 });
    expect((await q.load()).records.map((r) => r.seq)).toEqual([1]);
    const again = await store.open("k", "other");
    expect(again.durable).toBe(false);
    expect(warnings).toHaveLength(1);
    // Locked within the store, as a stored queue is: a second open of one (key, owner) waits.
    const locked = await store.open("k", "app").catch((e: unknown) => e);
    expect(isStateSyncError(locked, "QUEUE_LOCKED")).toBe(true);
    await q.put({ format: 1, seq: 2, kind: "command", name: "add", args: {}, queuedAt: 2, mv: 1 });
    await q.delete([1]);
    expect(await q.load()).toMatchObject({ records: [{ seq: 2 }], nextSeq: 3 });
    await q.close();
    await again.close();
    const reopened = await store.open("k", "app");
    expect(reopened.durable).toBe(false);
    await reopened.close();
  } finally {
    Object.defineProperty(globalThis, "indexedDB", original);
  }
});

it("holds a queue's lock against another store in the page (a Web Lock)", async () => {
  const databaseName = uniqueDatabase("pending-lock");
  const a = new IndexedDbPendingStore({ databaseName });
  const b = new IndexedDbPendingStore({ databaseName });
  const q = await a.open("k", "tab-0");
  const refused = await b.open("k", "tab-0").catch((e: unknown) => e);
  expect(isStateSyncError(refused, "QUEUE_LOCKED")).toBe(true);
  await q.close();
  await (await b.open("k", "tab-0")).close();
  await a.close();
  await b.close();
  await dropDatabase(databaseName);
});

it("without Web Locks keeps the queue in memory (two tabs could not be kept apart)", async () => {
  const warnings: unknown[] = [];
  const original = Object.getOwnPropertyDescriptor(Navigator.prototype, "locks")!;
  Object.defineProperty(Navigator.prototype, "locks", { get: () => undefined, configurable: true });
  try {
    const store = new IndexedDbPendingStore({
      databaseName: uniqueDatabase("pending-nolocks"),
      onWarning: (w) => warnings.push(w),
    });
    const q = await store.open("k", "app");
    expect(q.durable).toBe(false);
    expect(String(warnings[0])).toMatch(/no Web Locks/);
    await q.close();
  } finally {
    Object.defineProperty(Navigator.prototype, "locks", original);
  }
});

it("goes on in memory, warning once, when its database is deleted under it (Clear site data)", async () => {
  // A trial: deleting the database (DevTools, an app's logout) closed every open queue for good,
  // and every later update of the page rejected CLOSED until a reload, online too.
  const databaseName = uniqueDatabase("pending-deleted");
  const warnings: unknown[] = [];
  const store = new IndexedDbPendingStore({ databaseName, onWarning: (w) => warnings.push(w) });
  const q = await store.open("k", "app");
  const record = (seq: number) =>
    ({ format: 1, seq, kind: "update", name: "add", args: {}, queuedAt: seq, mv: 1 }) as const;
  await q.put(record(1));
  expect(q.durable).toBe(true);
  await new Promise<void>((resolve, reject) => {
    const request = indexedDB.deleteDatabase(databaseName);
    request.onsuccess = () => resolve();
    request.onerror = () => reject(request.error);
  });
  await q.put(record(2));
  expect(q.durable).toBe(false);
  await q.delete([1, 2]);
  await q.put(record(3));
  expect((await q.load()).records.map((r) => r.seq)).toEqual([3]);
  expect(warnings).toHaveLength(1);
  await q.close();
  // The next open opens the database again: stored, durable.
  const again = await store.open("k", "other");
  expect(again.durable).toBe(true);
  await again.close();
  await store.close();
  await dropDatabase(databaseName);
});

it("a stored record keyed by no seq (above 2^52, 0, a fraction) is damaged and not counted for nextSeq", async () => {
  // A hostile-input trial (on the Node store's file names): a record filed under 2^53 - 1 was
  // counted, and every later update failed (no seq was left). Keys are the same bound here.
  const databaseName = uniqueDatabase("pending");
  const store = new IndexedDbPendingStore({ databaseName });
  const record = (seq: number) =>
    ({ format: 1, seq, kind: "update", name: "add", args: {}, queuedAt: 1, mv: 1 }) as const;
  const q = await store.open("k", "app");
  await q.put(record(3));
  await q.close();
  const db = await openDB(databaseName);
  for (const seq of [2 ** 53 - 1, 2 ** 52 + 1, 0, 2.5]) {
    await db.put("records", { key: "k", owner: "app", seq, record: record(seq) });
  }
  db.close();
  const q2 = await store.open("k", "app");
  const loaded = await q2.load();
  expect(loaded.records).toEqual([record(3)]);
  expect(loaded.nextSeq).toBe(4);
  expect(loaded.damaged?.map((d) => d.seq)).toEqual([0, 2.5, 2 ** 52 + 1, 2 ** 53 - 1]);
  const again = await openDB(databaseName);
  await again.put("records", { key: "k", owner: "app", seq: 2 ** 53 - 1, record: record(1) });
  again.close();
  await q2.clear();
  expect(await q2.load()).toEqual({ records: [], nextSeq: 4 });
  await q2.close();
  await store.close();
  await dropDatabase(databaseName);
});
