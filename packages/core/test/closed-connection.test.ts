import {
  MemoryLog,
  MemoryPendingStore,
  MemorySnapshotStore,
  type SyncStatus,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { codeOf, open, until } from "./fixtures.js";
import { openQueued } from "./pending/fixtures.js";

/**
 * A log whose connection ends for good (nats.js closes a connection once its
 * `maxReconnectAttempts` ran out, or on `nc.close()`; here `MemoryLog.closeConnection()`) is a
 * final state of the replica: `stalled` with `CONNECTION_CLOSED`, reported once as an error
 * event, not writable; waiting calls and new ones reject with it; reads serve the last state;
 * `close()` resolves. Before, the replica stayed `offline` and writable, updates failed
 * `UNAVAILABLE` ("reconnecting") and `synced()` waited until `close()` (a fresh-eyes trial).
 */
describe("a log connection closed for good", () => {
  it("stalls a live replica with CONNECTION_CLOSED: one error event, not writable, reads kept", async () => {
    const server = new MemoryLog();
    const log = server.handle();
    const a = await open(log, { compaction: false });
    await a.update("increment", { by: 2 });
    const statuses: SyncStatus[] = [];
    a.on("status", (s) => statuses.push(s));
    const before = { state: a.state, revision: a.revision };
    log.closeConnection();
    expect(log.status).toBe("closed");
    expect(a.status).toBe("stalled");
    expect(statuses).toEqual(["stalled"]);
    expect(a.stallReason?.code).toBe("CONNECTION_CLOSED");
    expect(a.errors.map((e) => e.code)).toEqual(["CONNECTION_CLOSED"]);
    expect([a.writable, a.writeError?.code]).toEqual([false, "CONNECTION_CLOSED"]);
    // New calls reject with it at once, and append nothing.
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("CONNECTION_CLOSED");
    expect(await codeOf(a.updateUnconditionally("increment", { by: 1 }))).toBe("CONNECTION_CLOSED");
    expect(await codeOf(a.synced())).toBe("CONNECTION_CLOSED");
    expect(await codeOf(a.fetchUpdates())).toBe("CONNECTION_CLOSED");
    expect(await codeOf(a.waitFor(a.revision + 1))).toBe("CONNECTION_CLOSED");
    expect((await server.info()).latestRevision).toBe(before.revision);
    // Reads serve the last state; other connections to the log go on.
    expect({ state: a.state, revision: a.revision }).toEqual(before);
    const b = await open(server.handle(), { compaction: false });
    await b.update("increment", { by: 1 });
    expect(a.revision).toBe(before.revision);
    await a.close();
    expect(a.status).toBe("closed");
    await b.close();
  });

  it("rejects the updates, synced() and waitFor() that wait for an offline log", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    await a.update("increment", { by: 1 });
    log.setOffline(true);
    expect(a.status).toBe("offline");
    const waiting = [
      codeOf(a.update("increment", { by: 1 })),
      codeOf(a.updateUnconditionally("increment", { by: 1 })),
      codeOf(a.synced()),
      codeOf(a.waitFor(a.revision + 1)),
    ];
    log.closeConnection();
    expect(await Promise.all(waiting)).toEqual(Array(4).fill("CONNECTION_CLOSED"));
    expect(a.status).toBe("stalled");
    expect(a.errors.map((e) => e.code)).toEqual(["CONNECTION_CLOSED"]);
    await a.close();
  });

  it("an append the connection closed under has an unknown outcome; the replica stalls", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    // The client failed the request in flight (nats.js does so on close): it may be stored.
    log.failNextAppends(1, "CONNECTION_CLOSED");
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("UNKNOWN_OUTCOME");
    expect(a.stallReason?.code).toBe("CONNECTION_CLOSED");
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("CONNECTION_CLOSED");
    await a.close();
  });

  it("a replica opened on a closed connection fails to open, or serves its snapshot stalled", async () => {
    const server = new MemoryLog();
    const snapshots = new MemorySnapshotStore();
    const w = await open(server.handle(), { snapshots, compaction: false });
    await w.update("increment", { by: 5 });
    await w.close(); // saves the snapshot
    const closed = server.handle();
    closed.closeConnection();
    expect(await codeOf(open(closed, { compaction: false }))).toBe("CONNECTION_CLOSED");
    const r = await open(closed, { snapshots, waitFor: "restored", compaction: false });
    expect(r.state.count).toBe(5);
    await until(() => r.status === "stalled");
    expect(r.stallReason?.code).toBe("CONNECTION_CLOSED");
    expect(r.state.count).toBe(5);
    await r.close();
  });

  it("queued updates reject at once and stay stored; a later open drains them, each once", async () => {
    const server = new MemoryLog();
    const store = new MemoryPendingStore();
    const log = server.handle();
    const a = await openQueued(log, store);
    log.setOffline(true);
    const first = a.update("add", { card: "x" });
    const second = a.updateUnconditionally("bump", {});
    await Promise.all([first.queued, second.queued]);
    log.closeConnection();
    server.setOffline(false); // the server is back, but this connection is gone for good
    expect(await Promise.all([codeOf(first), codeOf(second)])).toEqual([
      "CONNECTION_CLOSED",
      "CONNECTION_CLOSED",
    ]);
    expect(await codeOf(a.flush())).toBe("CONNECTION_CLOSED");
    expect(a.pendingCount).toBe(2);
    expect(a.optimisticState.cards).toEqual(["x"]);
    await a.close();
    const b = await openQueued(server.handle(), store);
    await b.flush();
    expect(b.pendingCount).toBe(0);
    expect(b.state).toEqual({ cards: ["x"], n: 1 });
    await b.close();
  });
});
