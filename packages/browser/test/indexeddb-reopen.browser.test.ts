// The browser closing the IndexedDB connection under a save (issue 10, case 9): DevTools "clear
// storage", a backgrounded Safari tab. The store reopens with a backoff, reports each failure once,
// and never switches persistence off because of it.
import {
  IndexedDbSnapshotStore,
  type SnapshotRecord,
  type SnapshotStoreWarning,
} from "@statesync/browser";
import { afterEach, expect, it, vi } from "vitest";
import { dropDatabase, uniqueDatabase } from "./idb-helpers.js";

function record(revision: number): SnapshotRecord {
  return {
    format: 1,
    revision,
    state: { revision, text: "x".repeat(10_000) },
    logIdentity: "log-1",
    messageId: `m-${revision}`,
    model: "board",
    modelVersion: 1,
    savedAt: 1_700_000_000_000,
  };
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/**
 * Watches `indexedDB.open`: keeps every connection it gives (`connections`), and makes the next
 * `failNext` calls fail as a browser that refuses for a moment does (`UnknownError`).
 */
function watchOpens() {
  const connections: IDBDatabase[] = [];
  const control = { failNext: 0, connections };
  const open = IDBFactory.prototype.open;
  vi.spyOn(IDBFactory.prototype, "open").mockImplementation(function (
    this: IDBFactory,
    ...args: [string, number?]
  ) {
    if (control.failNext > 0) {
      control.failNext -= 1;
      throw new DOMException("Internal error opening backing store.", "UnknownError");
    }
    const request = open.apply(this, args);
    request.addEventListener("success", () => connections.push(request.result));
    return request;
  });
  return control;
}

function storeOn(databaseName: string, options: { attempts?: number } = {}) {
  const warnings: SnapshotStoreWarning[] = [];
  const store = new IndexedDbSnapshotStore({
    databaseName,
    onWarning: (w) => warnings.push(w),
    reopen: options.attempts ? { attempts: options.attempts, baseMs: 1, capMs: 4 } : undefined,
  });
  cleanup.push(() => store.close());
  return { store, warnings };
}

function fresh() {
  const databaseName = uniqueDatabase("reopen");
  cleanup.push(() => dropDatabase(databaseName));
  return databaseName;
}

/** What the browser does when it closes a connection by force: closed, then a `close` event. */
function forceClose(db: IDBDatabase): void {
  db.close();
  db.dispatchEvent(new Event("close"));
}

it("survives 12 forced closes in a row during saves, reporting each once", async () => {
  const databaseName = fresh();
  const opens = watchOpens();
  const { store, warnings } = storeOn(databaseName);
  await store.save("k", record(1));
  for (let round = 2; round <= 13; round++) {
    const saving = store.save("k", record(round));
    // The connection goes away while the save encodes, and the next two opens fail too.
    forceClose(opens.connections.at(-1)!);
    opens.failNext = 2;
    await saving;
  }
  expect(warnings.map((w) => [w.reason, w.fallback])).toEqual(
    Array.from({ length: 12 }, () => ["interrupted", false]),
  );
  expect(store.fallbackReason).toBeUndefined();
  // Still persisting: a later save, and what a reloaded page (a new store) finds.
  await store.save("k", record(14));
  vi.restoreAllMocks();
  const reloaded = storeOn(databaseName).store;
  expect((await reloaded.load("k"))?.revision).toBe(14);
});

it("keeps persisting when another connection deletes the database during saves", async () => {
  const databaseName = fresh();
  const { store, warnings } = storeOn(databaseName);
  await store.save("k", record(1));
  for (let round = 2; round <= 13; round++) {
    const saving = store.save("k", record(round));
    const deleting = new Promise<void>((resolve, reject) => {
      const request = indexedDB.deleteDatabase(databaseName);
      request.onsuccess = () => resolve();
      request.onerror = () => reject(request.error);
    });
    await Promise.all([saving, deleting]);
  }
  await store.save("k", record(14));
  expect(store.fallbackReason).toBeUndefined();
  expect(warnings.filter((w) => w.fallback)).toEqual([]);
  const reloaded = storeOn(databaseName).store;
  expect((await reloaded.load("k"))?.revision).toBe(14);
});

it("serves one call in memory when every reopen fails, and goes back to IndexedDB after", async () => {
  const databaseName = fresh();
  const opens = watchOpens();
  const { store, warnings } = storeOn(databaseName, { attempts: 3 });
  await store.save("k", record(1));
  const saving = store.save("k", record(2));
  forceClose(opens.connections.at(-1)!);
  opens.failNext = 5;
  await saving;
  expect(warnings.map((w) => [w.reason, w.fallback])).toEqual([
    ["interrupted", false],
    ["failed", false],
  ]);
  // The browser lets it open again: the next save is on IndexedDB.
  opens.failNext = 0;
  await store.save("k", record(3));
  expect(store.fallbackReason).toBeUndefined();
  vi.restoreAllMocks();
  expect((await storeOn(databaseName).store.load("k"))?.revision).toBe(3);
});
