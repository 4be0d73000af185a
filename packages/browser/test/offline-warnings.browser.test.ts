import { openSynchronizer } from "@statesync/browser";
import { offlineQueue } from "@statesync/browser/offline";
import { deleteDB } from "idb";
import { expect, it } from "vitest";
import { notes as model } from "./support/models.js";

// No server listens here: the updates wait in the offline queue.
const NOBODY = "ws://127.0.0.1:9";

it("tells openSynchronizer's onWarning once when the default offline queue falls back to memory", async () => {
  // A trial: with IndexedDB deleted under the queue (Storage.clearDataForOrigin) later updates
  // were `durable: false`, but the default store was built without the synchronizer's
  // `onWarning`, so nothing said why.
  const warnings: unknown[] = [];
  const sync = await openSynchronizer({
    servers: NOBODY,
    stream: `warned_${Date.now()}`,
    model,
    snapshots: false,
    tabs: false,
    onWarning: (w) => warnings.push(w),
    pending: offlineQueue({ owner: "warned" }),
  });
  const first = sync.update("add", { text: "stored" });
  first.catch(() => undefined);
  expect((await first.queued).durable).toBe(true);
  await deleteDB("statesync-pending");
  const later = [1, 2, 3].map((n) => sync.update("add", { text: `kept ${n}` }));
  for (const p of later) p.catch(() => undefined);
  for (const p of later) expect((await p.queued).durable).toBe(false);
  expect(warnings).toHaveLength(1);
  expect(String((warnings[0] as Error).message)).toMatch(/offline queue|memory/i);
  await sync.close();
});
