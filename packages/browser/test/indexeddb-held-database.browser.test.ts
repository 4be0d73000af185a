import { IndexedDbPendingStore } from "@statesync/browser";
import { createSynchronizer, defineModel, MemoryLog, pendingQueue } from "@statesync/core";
import { expect, it } from "vitest";
import { z } from "zod/v4";
import { dropDatabase, uniqueDatabase } from "./idb-helpers.js";

const counter = defineModel({
  name: "held-counter",
  state: z.object({ n: z.number().int() }),
  initial: { n: 0 },
  commands: {
    inc: {
      args: z.object({}),
      apply(draft) {
        draft.n += 1;
      },
    },
  },
});

/**
 * Keeps a read/write transaction over the queue's records open until `stop()`: a request after
 * each answer, as a tab that is frozen or hung in the middle of one (IndexedDB runs every later
 * write to those records after it). Resolves once the transaction holds them.
 */
async function holdRecords(databaseName: string): Promise<() => Promise<void>> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open(databaseName);
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
  const tx = db.transaction(["records", "queues"], "readwrite");
  let stopped = false;
  const spin = () => {
    if (!stopped) tx.objectStore("records").count().onsuccess = spin;
  };
  await new Promise<void>((resolve) => {
    tx.objectStore("records").count().onsuccess = () => {
      resolve();
      spin();
    };
  });
  return async () => {
    stopped = true;
    await new Promise((resolve) => (tx.oncomplete = resolve));
    db.close();
  };
}

/**
 * A replica of `counter` with its queue (owner "tab-0") in IndexedDB: on a new log and database,
 * or (a reopened page) on `log` and `databaseName`.
 */
async function openCounter(
  at: { log: MemoryLog; databaseName: string } = {
    log: new MemoryLog(),
    databaseName: uniqueDatabase("held"),
  },
) {
  const { log, databaseName } = at;
  const store = new IndexedDbPendingStore({ databaseName });
  const sync = await createSynchronizer({
    log,
    model: counter,
    pending: pendingQueue({ store, owner: "tab-0" }),
  });
  return { databaseName, store, log, sync };
}

it("a tab holding the queue's database keeps no update of another from committing", async () => {
  const { databaseName, log, sync } = await openCounter();
  const release = await holdRecords(databaseName);
  const first = sync.update("inc", {});
  const second = sync.update("inc", {});
  let queued = false;
  void second.queued.then(() => (queued = true));
  await Promise.all([first, second]);
  expect(sync.state.n).toBe(2);
  expect(queued).toBe(false); // its record is still behind the other transaction
  await release();
  expect((await second.queued).durable).toBe(true);
  await sync.close();
  // The records were deleted once the database was free: a new opener has nothing to push.
  const reopened = await openCounter({ log: log.handle(), databaseName });
  expect(reopened.sync.pendingCount).toBe(0);
  expect(reopened.sync.state.n).toBe(2);
  await reopened.sync.close();
  await reopened.store.close();
  await dropDatabase(databaseName);
});

it("opening a queue while another tab holds the database: in memory after 5 s, nothing lost", async () => {
  const databaseName = uniqueDatabase("held-open");
  const warnings: unknown[] = [];
  const first = new IndexedDbPendingStore({ databaseName });
  const stored = await first.open("k", "tab-0");
  await stored.load();
  const record = { format: 1, seq: 1, kind: "command", name: "inc", args: {}, queuedAt: 1, mv: 1 };
  await stored.put(record as never);
  await stored.close();

  const release = await holdRecords(databaseName);
  const store = new IndexedDbPendingStore({ databaseName, onWarning: (w) => warnings.push(w) });
  // The opening transaction waits behind the held one: the queue runs in memory.
  const a = await store.open("k", "tab-0");
  expect(a.durable).toBe(false);
  expect(await a.load()).toEqual({ records: [], nextSeq: 1 });
  // The slot was left free: another opener takes the stored queue once the database answers.
  const b = await store.open("k", "tab-1"); // another slot, also in memory while held
  expect(b.durable).toBe(false);
  expect(String(warnings[0])).toMatch(/did not answer within 5000 ms/);
  await release();
  const later = new IndexedDbPendingStore({ databaseName });
  const c = await later.open("k", "tab-0");
  expect(c.durable).toBe(true);
  expect(c.origin).toBe(stored.origin);
  expect((await c.load()).records).toEqual([record]);
  for (const q of [a, b, c]) await q.close();
  await store.close();
  await later.close();
  await first.close();
  await dropDatabase(databaseName);
}, 30_000);

it("loading a queue while another tab holds the database: a new origin, the lock left", async () => {
  const databaseName = uniqueDatabase("held-load");
  const store = new IndexedDbPendingStore({ databaseName, onWarning: () => undefined });
  const opened = await store.open("k", "tab-0");
  const release = await holdRecords(databaseName);
  const loaded = await opened.load();
  expect(loaded).toEqual({ records: [], nextSeq: 1 });
  expect(opened.durable).toBe(false);
  await release();
  // The slot's lock was released with the stored queue: another store opens it, stored origin.
  const other = new IndexedDbPendingStore({ databaseName });
  const again = await other.open("k", "tab-0");
  expect(again.durable).toBe(true);
  expect(again.origin).not.toBe(opened.origin);
  await again.close();
  await opened.close();
  await other.close();
  await store.close();
  await dropDatabase(databaseName);
}, 30_000);

for (const how of ["discard", "clearPending"] as const) {
  it(`a ${how}ed update whose record another tab held up across close() does not come back`, async () => {
    // Found by a fresh-eyes trial: with the delete chained after the held put, it reached a
    // queue closed meanwhile, the put landed when the other tab let go, and the next opener
    // pushed the update the user had discarded (or cleared at logout).
    const { databaseName, store, log, sync } = await openCounter();
    log.setOffline(true);
    while (sync.status === "live") await new Promise((r) => setTimeout(r, 10));
    const release = await holdRecords(databaseName);
    const p = sync.update("inc", {});
    const code = p.catch((e: { code?: string }) => e.code);
    if (how === "discard") expect(await sync.discard(sync.pending[0]!.id)).toBe(true);
    else expect(await sync.clearPending()).toBe(1);
    expect(await code).toBe("ABORTED");
    await sync.close();
    await store.close();
    await release(); // the other tab's transaction ends: the put lands, then the delete
    log.setOffline(false);
    const reopened = await openCounter({ log: log.handle(), databaseName });
    expect(reopened.sync.pendingCount).toBe(0);
    await reopened.sync.flush();
    expect(reopened.sync.state.n).toBe(0);
    await reopened.sync.close();
    await reopened.store.close();
    await dropDatabase(databaseName);
  }, 30_000);
}
