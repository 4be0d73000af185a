import {
  IndexedDbSnapshotStore,
  isStateSyncError,
  jetStreamSnapshotKey,
  MemoryPendingStore,
  openSynchronizer,
  type SnapshotStoreWarning,
} from "@statesync/browser";
import { offlineQueue } from "@statesync/browser/offline";
import { expect, it, vi } from "vitest";
import { dropDatabase, uniqueDatabase } from "./idb-helpers.js";
import { notes as model } from "./support/models.js";

// No server listens here: these tests are about what happens before the network answers.
const NOBODY = "ws://127.0.0.1:9";

it("refuses a server address that is not ws:// or wss://", async () => {
  for (const servers of ["127.0.0.1:4222", "nats://127.0.0.1:4222", ["ws://a:1", "b:2"]]) {
    const error = await openSynchronizer({ servers, stream: "notes", model }).catch((e) => e);
    expect(isStateSyncError(error, "VALIDATION")).toBe(true);
  }
});

/** A store holding a snapshot of `stream` at revision 12. */
async function storeWithSnapshot(stream: string) {
  const databaseName = uniqueDatabase("open");
  const store = new IndexedDbSnapshotStore({ databaseName });
  await store.save(jetStreamSnapshotKey({ stream }), {
    format: 1,
    revision: 12,
    state: { notes: ["kept across reloads"] },
    logIdentity: `jetstream:${stream}:${stream}.log@2026-01-01T00:00:00Z`,
    model: "notes",
    modelVersion: 1,
    savedAt: Date.now(),
  });
  return { store, databaseName };
}

it("resolves with the state restored from IndexedDB before any server answers", async () => {
  const { store, databaseName } = await storeWithSnapshot("notes_1");
  const sync = await openSynchronizer({
    servers: NOBODY,
    stream: "notes_1",
    model,
    snapshots: store,
  });
  expect(sync.state).toEqual({ notes: ["kept across reloads"] });
  expect(sync.revision).toBe(12);
  expect(sync.stats.snapshotsRestored).toBe(1);
  expect(["connecting", "offline"]).toContain(sync.status);
  await sync.close();
  expect(sync.status).toBe("closed");
  await store.close();
  await dropDatabase(databaseName);
});

it("opens with the default IndexedDB store and no stored state", async () => {
  const warnings: SnapshotStoreWarning[] = [];
  const sync = await openSynchronizer({
    servers: NOBODY,
    stream: `notes_${Date.now()}`,
    model,
    onWarning: (w) => warnings.push(w),
  });
  expect(sync.revision).toBe(0);
  expect(sync.state).toEqual({ notes: [] });
  await sync.close();
  expect(warnings).toEqual([]);
});

it("saves the snapshot when the page is hidden or left, until closed", async () => {
  const { store, databaseName } = await storeWithSnapshot("notes_2");
  const sync = await openSynchronizer({
    servers: NOBODY,
    stream: "notes_2",
    model,
    snapshots: store,
  });
  const saves = vi.spyOn(store, "save");
  window.dispatchEvent(new PageTransitionEvent("pagehide"));
  await expect.poll(() => saves.mock.calls.length).toBe(1);
  expect(saves.mock.calls[0]?.[1].revision).toBe(12);
  await sync.close(); // saves once more, then stops listening
  window.dispatchEvent(new PageTransitionEvent("pagehide"));
  expect(saves.mock.calls.length).toBe(2);
  await store.close();
  await dropDatabase(databaseName);
});

it("says offline as soon as the WebSocket is refused, not after a request times out", async () => {
  // Issue 12: a page opened while the server was down said `connecting` until its first request
  // timed out (requestTimeoutMs, 5 s by default). With a request timeout of 10 minutes, only the
  // refused connection itself can make this replica `offline` within the test's time.
  for (const tabs of [false, true]) {
    const errors: string[] = [];
    const sync = await openSynchronizer({
      servers: NOBODY,
      stream: `notes_refused_${Date.now()}`,
      model,
      snapshots: false,
      requestTimeoutMs: 600_000,
      tabs,
      onError: (e) => errors.push(`${e.code}: ${e.message}`),
    });
    await vi.waitFor(() => expect(sync.status).toBe("offline"), { timeout: 20_000 });
    await vi.waitFor(() =>
      expect(errors[0]).toMatch(/^UNAVAILABLE: cannot connect to ws:\/\/127\.0\.0\.1:9/),
    );
    // What the browser tells, not nats.ws's bare UNKNOWN_ERROR (a trial).
    expect(errors[0]).toMatch(/before the NATS handshake/);
    expect(errors[0]).not.toMatch(/UNKNOWN_ERROR/);
    await sync.close();
  }
});

it("takes the offline queue as offlineQueue() of @statesync/browser/offline, and refuses anything else", async () => {
  for (const pending of [{ owner: "x" }, {}, true]) {
    const error = await openSynchronizer({
      servers: NOBODY,
      stream: "notes",
      model,
      // the shape before the queue moved to its own entry point
      pending: pending as never,
    }).catch((e) => e);
    expect(isStateSyncError(error, "VALIDATION")).toBe(true);
    expect(String(error.message)).toContain("offlineQueue");
  }
  expect(() => offlineQueue({ owner: "o".repeat(62) })).toThrow(/61 characters/);
  expect(() => offlineQueue({ store: 1 as never })).toThrow(/PendingStore/);

  // Offline (nobody listens), an update waits in the queue and shows in the optimistic view.
  const store = new MemoryPendingStore();
  const sync = await openSynchronizer({
    servers: NOBODY,
    stream: "notes",
    model,
    snapshots: false,
    pending: offlineQueue({ owner: "t", store }),
  });
  void sync.update("add", { text: "offline" }).catch(() => undefined);
  await vi.waitFor(() => expect(sync.pendingCount).toBe(1));
  expect(sync.optimisticState.notes).toEqual(["offline"]);
  expect(sync.state.notes).toEqual([]);
  await sync.close();
  // The queue kept it, in the first slot of owner "t".
  const again = await openSynchronizer({
    servers: NOBODY,
    stream: "notes",
    model,
    snapshots: false,
    tabs: false,
    pending: offlineQueue({ owner: "t", store: store.sibling() }),
  });
  expect(again.pending.map((p) => p.args)).toEqual([{ text: "offline" }]);
  await again.close();
});
