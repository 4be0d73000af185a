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

it("a tab holding the queue's database keeps no update of another from committing", async () => {
  const databaseName = uniqueDatabase("held");
  const store = new IndexedDbPendingStore({ databaseName });
  const log = new MemoryLog();
  const sync = await createSynchronizer({
    log,
    model: counter,
    pending: pendingQueue({ store, owner: "tab-0" }),
  });
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
  const again = new IndexedDbPendingStore({ databaseName });
  const reopened = await createSynchronizer({
    log: log.handle(),
    model: counter,
    pending: pendingQueue({ store: again, owner: "tab-0" }),
  });
  expect(reopened.pendingCount).toBe(0);
  expect(reopened.state.n).toBe(2);
  await reopened.close();
  await again.close();
  await dropDatabase(databaseName);
});
