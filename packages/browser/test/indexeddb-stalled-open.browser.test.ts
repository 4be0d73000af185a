import {
  IndexedDbPendingStore,
  IndexedDbSnapshotStore,
  type SnapshotRecord,
  type SnapshotStoreWarning,
} from "@statesync/browser";
import { afterEach, expect, it, vi } from "vitest";
import { openDatabase } from "../src/idb-transaction.js";
import { dropDatabase, uniqueDatabase } from "./idb-helpers.js";

// Chromium can leave an IndexedDB open unanswered for 25-120 s (after the origin's site data is
// cleared, or queued behind a deleteDatabase that an old connection never gives way to). Here
// the second: a connection at version 1 that ignores `versionchange`, and a deleteDatabase it
// blocks, so every later open of that database waits in the queue behind the delete, without a
// `blocked` event of its own. The stores must not wait that out.

/** The open requests that fired `success` or `error`. */
const settled = new WeakSet<IDBRequest>();

/** Every `indexedDB.open` request the page made since the spy was set. */
function spyOnOpens(): IDBOpenDBRequest[] {
  const requests: IDBOpenDBRequest[] = [];
  const open = IDBFactory.prototype.open;
  vi.spyOn(IDBFactory.prototype, "open").mockImplementation(function (
    this: IDBFactory,
    ...args: [string, number?]
  ) {
    const request = open.apply(this, args);
    requests.push(request);
    const settle = () => settled.add(request);
    request.addEventListener("success", settle);
    request.addEventListener("error", settle);
    return request;
  });
  return requests;
}

/**
 * Stalls every later open of `name`: resolves once the delete is blocked, to a function that
 * lets the stubborn connection go and resolves when the delete went through.
 */
async function stallOpens(name: string): Promise<() => Promise<void>> {
  const stubborn = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open(name, 1);
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
  stubborn.onversionchange = () => undefined; // never gives way
  const deletion = indexedDB.deleteDatabase(name);
  const deleted = new Promise<void>((resolve, reject) => {
    deletion.onsuccess = () => resolve();
    deletion.onerror = () => reject(deletion.error);
  });
  await new Promise<void>((resolve) => (deletion.onblocked = () => resolve()));
  let released = false;
  const release = async () => {
    if (!released) stubborn.close();
    released = true;
    await deleted;
  };
  cleanup.push(release);
  return release;
}

/**
 * Waits until every request in `requests` has answered, then checks that no connection it
 * opened is still open (a transaction on a closed connection throws `InvalidStateError`).
 */
async function expectNoOpenConnection(requests: IDBOpenDBRequest[]): Promise<void> {
  // Settled, not `readyState` "done": Chromium's open request is "done" during `upgradeneeded`
  // and "pending" again until its upgrade transaction finishes (a loaded CI run read `error`
  // in that window: "The request has not finished").
  await vi.waitFor(() => expect(requests.every((r) => settled.has(r))).toBe(true), {
    timeout: 5_000,
  });
  await new Promise((resolve) => setTimeout(resolve, 50)); // the close follows the success
  const open = requests.filter((r) => {
    const db = r.error ? undefined : r.result;
    if (!db || db.objectStoreNames.length === 0) return false;
    try {
      db.transaction(db.objectStoreNames.item(0)!, "readonly").abort();
      return true;
    } catch {
      return false; // closed
    }
  });
  expect(open).toEqual([]);
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

it("a pending queue whose database open stalls runs in memory, with a warning", async () => {
  const databaseName = uniqueDatabase("stalled-pending");
  const release = await stallOpens(databaseName);
  const requests = spyOnOpens();
  const warnings: unknown[] = [];
  const store = new IndexedDbPendingStore({ databaseName, onWarning: (w) => warnings.push(w) });
  cleanup.push(() => store.close());

  const queue = await store.open("k", "tab-0");
  expect(queue.durable).toBe(false);
  expect(await queue.load()).toEqual({ records: [], nextSeq: 1 });
  expect(warnings).toHaveLength(1);
  expect(String(warnings[0])).toMatch(/did not open within 5000 ms/);
  expect(requests).toHaveLength(1); // the store did open IndexedDB, and gave that open up

  // The stubborn connection goes: the late open succeeds and is closed, not kept.
  await release();
  await expectNoOpenConnection(requests);
  // The next open opens the database again.
  const again = await store.open("k", "tab-1");
  expect(again.durable).toBe(true);
  await again.close();
  await queue.close();
  await store.close();
  await dropDatabase(databaseName);
}, 20_000);

it("a snapshot store whose database open stalls serves that call in memory, then opens again", async () => {
  const databaseName = uniqueDatabase("stalled-snapshot");
  const release = await stallOpens(databaseName);
  const requests = spyOnOpens();
  const warnings: SnapshotStoreWarning[] = [];
  const store = new IndexedDbSnapshotStore({ databaseName, onWarning: (w) => warnings.push(w) });
  cleanup.push(() => store.close());
  const record = (revision: number): SnapshotRecord => ({
    format: 1,
    revision,
    state: { n: revision },
    logIdentity: "log-1",
    messageId: `m-${revision}`,
    model: "counter",
    modelVersion: 1,
    savedAt: 1_700_000_000_000,
  });

  // Both calls wait for one open, given up after 5 s: each is served in memory, one warning.
  const [loaded] = await Promise.all([store.load("k"), store.save("k", record(3))]);
  expect(loaded).toBeUndefined();
  expect(warnings.map((w) => [w.reason, w.fallback])).toEqual([["failed", false]]);
  expect(warnings[0]?.message).toMatch(/did not open within 5000 ms/);
  expect(store.fallbackReason).toBeUndefined(); // not switched off for the page's life

  // The stall ends: the late connection was closed, and the next calls open IndexedDB again.
  await release();
  await expectNoOpenConnection(requests);
  await store.save("k", record(4));
  expect((await store.load("k"))?.revision).toBe(4);
  const other = new IndexedDbSnapshotStore({ databaseName, onWarning: (w) => warnings.push(w) });
  expect((await other.load("k"))?.revision).toBe(4); // stored in IndexedDB, not in memory
  expect(warnings).toHaveLength(1);
  await other.close();
  await store.close();
  await dropDatabase(databaseName);
}, 20_000);

it("an open's limit above setTimeout's bound is clamped to it, not fired at once", async () => {
  const databaseName = uniqueDatabase("stalled-clamp");
  const release = await stallOpens(databaseName);
  let settled = "";
  const opening = openDatabase(databaseName, undefined, 2 ** 31 + 5);
  opening.then(
    () => (settled = "opened"),
    (e: unknown) => (settled = String(e)),
  );
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(settled).toBe(""); // unclamped, the timer fired at once: "did not open within"
  await release();
  const db = await opening; // the open answers once the stall ends
  db.close();
  await dropDatabase(databaseName);
});
