import { MemoryLog, MemoryPendingStore, type PendingStore } from "@statesync/core";
import { expect, it } from "vitest";
import { until } from "../fixtures.js";
import { openQueued } from "./fixtures.js";

/**
 * Found by a fresh-eyes trial (stop 26): `PendingUpdate.durable` was true from the call on,
 * before the update's record was written, and the collab board said "saved on this device" for
 * seconds (IndexedDB writes behind a burst of edits) before the records existed; a reload then
 * lost 976 of 1,000 such edits. `durable` now says the record is stored; `storing` that it is
 * being written.
 */
it("says an update is durable only once its record is stored, and tells its readers then", async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  const inner = new MemoryPendingStore();
  // A durable store (as IndexedDB's) whose writes wait at the gate.
  const store: PendingStore = {
    async open(key, owner) {
      const q = await inner.open(key, owner);
      return {
        durable: true,
        get origin() {
          return q.origin;
        },
        load: () => q.load(),
        put: async (record) => {
          await gate;
          return q.put(record);
        },
        delete: (seqs) => q.delete(seqs),
        clear: () => q.clear(),
        close: () => q.close(),
      };
    },
  };
  const log = new MemoryLog();
  const a = await openQueued(log, store);
  log.setOffline(true);
  const calls: number[] = [];
  a.subscribe(() => calls.push(a.pending.filter((p) => p.durable).length), { optimistic: true });
  const update = a.update("add", { card: "x" });
  update.catch(() => undefined);
  expect(a.pending).toMatchObject([{ command: "add", durable: false, storing: true }]);
  release();
  await update.queued;
  expect(a.pending).toMatchObject([{ command: "add", durable: true, storing: false }]);
  await until(() => calls.at(-1) === 1); // a subscriber heard of it
  log.setOffline(false);
  await update;
  await a.close();
});
