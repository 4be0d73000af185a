import { IndexedDbPendingStore, IndexedDbSnapshotStore } from "@statesync/browser";
import { cdp } from "vitest/browser";
import { afterEach, beforeEach, expect, it } from "vitest";
import { uniqueDatabase } from "./idb-helpers.js";

// A trial: clearing the origin's IndexedDB while tabs wrote (Storage.clearDataForOrigin, what
// DevTools "Clear site data" does) force-closes every connection and aborts the transactions in
// flight. A store call whose first request failed left before awaiting `tx.done`, whose
// rejection ("Connection is closing because of: Force close delete origin") then reached the
// page's unhandledrejection. Every call must settle as the stores document, and nothing else.

let unhandled: unknown[] = [];
const listen = (event: PromiseRejectionEvent) => {
  unhandled.push(event.reason);
  event.preventDefault();
};
beforeEach(() => {
  unhandled = [];
  window.addEventListener("unhandledrejection", listen);
});
afterEach(() => window.removeEventListener("unhandledrejection", listen));

async function clearIndexedDb(): Promise<void> {
  await cdp().send("Storage.clearDataForOrigin", {
    origin: location.origin,
    storageTypes: "indexeddb",
  });
}

const record = (seq: number) =>
  ({ format: 1, seq, kind: "update", name: "add", args: {}, queuedAt: seq, mv: 1 }) as const;

it("leaves no unhandled rejection when IndexedDB is cleared under pending writes", async () => {
  const warnings: unknown[] = [];
  const pending = new IndexedDbPendingStore({
    databaseName: uniqueDatabase("force-pending"),
    onWarning: (w) => warnings.push(w),
  });
  const snapshots = new IndexedDbSnapshotStore({
    databaseName: uniqueDatabase("force-snapshots"),
    onWarning: (w) => warnings.push(w),
    reopen: { attempts: 3, baseMs: 5, capMs: 20 },
  });
  const q = await pending.open("k", "app");
  for (let seq = 1; seq <= 50; seq++) await q.put(record(seq));
  // Each call's outcome is taken at once: only a promise nobody holds may reach the page.
  const calls: Array<Promise<PromiseSettledResult<unknown>>> = [];
  const call = (p: Promise<unknown>) =>
    calls.push(
      p.then(
        (value) => ({ status: "fulfilled", value }) as const,
        (reason: unknown) => ({ status: "rejected", reason }) as const,
      ),
    );
  const snapshot = (revision: number) => ({
    format: 1 as const,
    revision,
    state: { n: revision },
    logIdentity: "jetstream:s:s.log@2026-01-01T00:00:00Z",
    model: "m",
    modelVersion: 1,
    savedAt: 1,
  });
  for (let round = 0; round < 20; round++) {
    call(q.delete([round + 1]));
    call(q.load());
    call(q.put(record(100 + round)));
    call(snapshots.save(`s${round % 3}`, snapshot(round + 1)));
    call(snapshots.load(`s${round % 3}`));
    if (round === 3) call(clearIndexedDb());
    await new Promise((resolve) => setTimeout(resolve, 0));
  }
  const outcomes = await Promise.all(calls);
  // Give the aborted transactions' `done` promises time to reject, and the page to report them.
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(unhandled.map(String)).toEqual([]);
  // What did reject is a typed error of the stores (QUEUE_FAILED), not a bare DOMException.
  for (const o of outcomes) {
    if (o.status === "rejected") expect(o.reason).toMatchObject({ code: "QUEUE_FAILED" });
  }
  await q.close();
  await pending.close();
  await snapshots.close();
});

/**
 * Makes the upgrade transaction of the next `count` opens that create or upgrade a database
 * abort, as a force close under it does (Clear site data while a database is being created). The
 * listener is added after idb's, which has wrapped the transaction (and made its `done`) by then.
 */
function abortUpgrades(count: number): () => void {
  const open = IDBFactory.prototype.open;
  let left = count;
  IDBFactory.prototype.open = function (this: IDBFactory, name: string, version?: number) {
    const request = open.call(this, name, version);
    queueMicrotask(() =>
      request.addEventListener("upgradeneeded", () => {
        if (left-- > 0) request.transaction!.abort();
      }),
    );
    return request;
  };
  return () => {
    IDBFactory.prototype.open = open;
  };
}

// idb's openDB wraps the upgrade transaction for the `upgrade` callback, which makes its `done`
// promise; nothing awaited it, so an upgrade aborted under a force close ("Connection is closing
// because of: Force close delete origin", the CI failure) reached the page's unhandledrejection.
it("leaves no unhandled rejection when a database's upgrade transaction aborts", async () => {
  const restore = abortUpgrades(2);
  const warnings: unknown[] = [];
  const pending = new IndexedDbPendingStore({
    databaseName: uniqueDatabase("abort-pending"),
    onWarning: (w) => warnings.push(w),
  });
  const snapshots = new IndexedDbSnapshotStore({
    databaseName: uniqueDatabase("abort-snapshots"),
    onWarning: (w) => warnings.push(w),
  });
  try {
    // The pending store's open fails: the queue runs in memory, with a warning.
    const q = await pending.open("k", "app");
    expect(q.durable).toBe(false);
    await q.put(record(1));
    expect((await q.load()).records.map((r) => r.seq)).toEqual([1]);
    // The snapshot store's first open fails: it reopens at once and stays on IndexedDB.
    expect(await snapshots.load("s")).toBeUndefined();
    expect(snapshots.fallbackReason).toBeUndefined();
    await q.close();
  } finally {
    restore();
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
  expect(unhandled.map(String)).toEqual([]);
  expect(warnings).toHaveLength(1); // the queue's; the snapshot store's reopen is silent
  await pending.close();
  await snapshots.close();
});
