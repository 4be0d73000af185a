// The rows a tab's offline queue leaves in IndexedDB (docs/offline.md, "Tabs"). A new user's
// trial: one tab, an offline session with reloads, and once back online the pending database held
// a row for every one of the 32 slots (`<owner>-0` to `-31`, all empty): the leading tab's drain
// of dead tabs' slots opened each slot to look at it, and opening a slot writes its row. It now
// looks with the store's read-only `owners`: only the slots used have rows.
import {
  IndexedDbPendingStore,
  jetStreamSnapshotKey,
  openSynchronizer,
  type PendingRecord,
} from "@statesync/browser";
import { offlineQueue } from "@statesync/browser/offline";
import { openDB } from "idb";
import { expect, inject, it, vi } from "vitest";
import { dropDatabase, uniqueDatabase } from "./idb-helpers.js";
import { notes as model } from "./support/models.js";

const LIVE = inject("natsWsUrl");
// No server listens here: the offline session.
const NOBODY = "ws://127.0.0.1:9";

/** The owners with a row in the database's `queues` store, read without the store. */
async function rows(databaseName: string): Promise<string[]> {
  const db = await openDB(databaseName);
  try {
    const all = (await db.getAll("queues")) as Array<{ owner: string }>;
    return all.map((row) => row.owner).sort();
  } finally {
    db.close();
  }
}

const orphan = (text: string): PendingRecord => ({
  format: 1,
  seq: 1,
  kind: "update",
  name: "add",
  args: { text },
  queuedAt: Date.now(),
  mv: 1,
});

for (const servers of [NOBODY, LIVE]) {
  const session = servers === NOBODY ? "offline" : "online";
  it(`leaves rows for the slots used only, after the drain looked at every slot (${session})`, async () => {
    const databaseName = uniqueDatabase("slots");
    const stream = `slots_${session}_${Date.now()}`;
    const key = jetStreamSnapshotKey({ stream });
    // A tab that died left an edit in slot s-5.
    const dead = new IndexedDbPendingStore({ databaseName });
    const left = await dead.open(key, "s-5");
    await left.put(orphan(`left by a dead tab (${session})`));
    await left.close();
    await dead.close();

    // The drain's reports of s-5 (as every tab hears them): its second comes after its first
    // round looked at every slot (rounds never overlap): the round showed or pushed s-5's edit,
    // then withdrew it once pushed (online) or showed it again in the next round (offline).
    const reports: unknown[] = [];
    const channel = new BroadcastChannel(`statesync:${servers}:${key}:pending`);
    channel.onmessage = (e: MessageEvent) => {
      if ((e.data as { q?: string }).q === "s-5") reports.push(e.data);
    };
    const store = new IndexedDbPendingStore({ databaseName });
    const sync = await openSynchronizer({
      servers,
      stream,
      model,
      snapshots: false,
      pending: offlineQueue({ owner: "s", store }),
    });
    try {
      void sync.update("add", { text: "mine" }).catch(() => undefined);
      // The leading tab's drain found s-5: it shows its edit (offline) or pushes it (online).
      const view = () => (servers === NOBODY ? sync.optimisticState : sync.state).notes;
      await vi.waitFor(() => expect(view()).toContain(`left by a dead tab (${session})`), {
        timeout: 30_000,
      });
      await vi.waitFor(() => expect(reports.length).toBeGreaterThanOrEqual(2), { timeout: 30_000 });
      expect(await rows(databaseName)).toEqual(["s-0", "s-5"]); // before: s-0 to s-31
    } finally {
      channel.close();
      await sync.close();
      await dropDatabase(databaseName);
    }
  });
}
