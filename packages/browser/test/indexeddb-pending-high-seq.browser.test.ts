import {
  IndexedDbPendingStore,
  isStateSyncError,
  PendingQueueWarning,
  type PendingRecord,
} from "@statesync/browser";
import { openDB } from "idb";
import { expect, it } from "vitest";
import { dropDatabase, uniqueDatabase } from "./idb-helpers.js";

// Versions before the 2^52 bound on seqs stored a queue row's `highSeq` up to 2^53 - 1. Read
// as it was, `nextSeq` came out above 2^52 and every later `put` failed VALIDATION.

const record = (seq: number): PendingRecord => ({
  format: 1,
  seq,
  kind: "update",
  name: "add",
  args: { n: seq },
  queuedAt: 1,
  mv: 1,
});

it("a queue row whose highSeq is above 2^52 is set back to the highest record, with a warning", async () => {
  const databaseName = uniqueDatabase("pending-high-seq");
  const warnings: unknown[] = [];
  const store = new IndexedDbPendingStore({ databaseName, onWarning: (w) => warnings.push(w) });
  const first = await store.open("k", "app");
  const origin = first.origin;
  await first.put(record(7));
  await first.close();

  // What an earlier version left: the row's highSeq and a record above the bound.
  const db = await openDB(databaseName);
  const row = await db.get("queues", ["k", "app"]);
  await db.put("queues", { ...row, highSeq: 2 ** 52 + 5 });
  await db.put("records", { key: "k", owner: "app", seq: 2 ** 52 + 3, record: record(3) });
  db.close();

  const queue = await store.open("k", "app");
  expect(queue.durable).toBe(true);
  expect(queue.origin).toBe(origin); // names the records stored without one: kept
  expect(warnings).toHaveLength(1);
  expect(isStateSyncError(warnings[0], "CORRUPT_PENDING")).toBe(true);
  const loaded = await queue.load();
  expect(loaded.records.map((r) => r.seq)).toEqual([7]);
  expect(loaded.damaged?.map((d) => d.seq)).toEqual([2 ** 52 + 3]);
  expect(loaded.nextSeq).toBe(8);
  await queue.put(record(loaded.nextSeq)); // rejected VALIDATION before (nextSeq was 2^52 + 6)
  await queue.delete([7]);
  await queue.close();

  const again = await store.open("k", "app");
  expect(await again.load()).toMatchObject({ records: [{ seq: 8 }], nextSeq: 9 });
  expect(again.durable).toBe(true);
  expect(warnings).toHaveLength(1); // repaired once
  await again.close();
  await store.close();
  await dropDatabase(databaseName);

  // The default offline queue reports it as such, not as a fallback to memory.
  const warning = new PendingQueueWarning(warnings[0]);
  expect([warning.reason, warning.fallback]).toEqual(["queue-damaged", false]);
});
