import { openSynchronizer, startNatsServer, type StateSyncError } from "@statesync/node";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { codeOf, nextStatus, uniqueStream, useNatsServer } from "./helpers.js";
import { CLIENT_LINES } from "./support/client-lines.js";
import { counter } from "./support/models.js";

/**
 * A connection handed in as `connection` that nats.js closes for good: `nc.close()`, or a
 * connection made with a finite `maxReconnectAttempts` once the server is gone for good. The
 * replica must say so, as a final state: `stalled` with `CONNECTION_CLOSED`, one error event,
 * not writable, waiting and new calls rejecting with it, reads serving its last state, queued
 * updates kept on disk for a later open. Before, it stayed `offline` and writable without an
 * event, updates failed `UNAVAILABLE` ("reconnecting") and `synced()` waited until `close()`
 * (a fresh-eyes trial).
 */
const ctx = useNatsServer();

describe.each(CLIENT_LINES)("a connection closed for good, nats.js $name", (line) => {
  it("nc.close() on a passed-in connection stalls the replica with CONNECTION_CLOSED", async () => {
    const nc = await line.tcp(ctx.server.url);
    const errors: StateSyncError[] = [];
    const sync = await openSynchronizer({
      connection: nc,
      ...line.logOptions,
      stream: uniqueStream("CLOSED_NC"),
      model: counter,
      snapshots: false,
      onError: (e) => errors.push(e),
    });
    try {
      await sync.update("increment", { by: 3 });
      const before = { state: sync.state, revision: sync.revision };
      const stalled = nextStatus(sync, "stalled");
      await nc.close();
      await stalled;
      expect(sync.stallReason?.code).toBe("CONNECTION_CLOSED");
      expect(errors.map((e) => e.code)).toEqual(["CONNECTION_CLOSED"]);
      expect([sync.writable, sync.writeError?.code]).toEqual([false, "CONNECTION_CLOSED"]);
      expect(await codeOf(sync.update("increment", { by: 1 }))).toBe("CONNECTION_CLOSED");
      expect(await codeOf(sync.updateUnconditionally("increment", { by: 1 }))).toBe(
        "CONNECTION_CLOSED",
      );
      expect(await codeOf(sync.synced())).toBe("CONNECTION_CLOSED");
      expect({ state: sync.state, revision: sync.revision }).toEqual(before);
    } finally {
      await sync.close();
    }
    expect(sync.status).toBe("closed");
  });

  it("maxReconnectAttempts: 2 and the server gone: waiting calls reject, queued updates stay on disk", async () => {
    const server = await startNatsServer();
    const dir = await mkdtemp(path.join(tmpdir(), "statesync-closed-"));
    const stream = uniqueStream("CLOSED_MRA");
    try {
      const nc = await line.tcp(server.url, { maxReconnectAttempts: 2, reconnectTimeWait: 500 });
      const errors: StateSyncError[] = [];
      const common = { ...line.logOptions, stream, model: counter, snapshotDir: dir };
      const sync = await openSynchronizer({
        ...common,
        connection: nc,
        onError: (e) => errors.push(e),
      });
      const queued = await openSynchronizer({
        ...common,
        connection: nc,
        snapshotKey: "queued", // its own snapshot file beside `sync`'s
        pending: { owner: "device-1" },
      });
      await sync.update("increment", { by: 1 });
      await queued.synced();
      const offline = nextStatus(sync, "offline");
      await server.kill("SIGKILL");
      await offline;
      // Calls made while nats.js still tries to reconnect wait for the log...
      const update = sync.update("increment", { by: 10 });
      const command = sync.updateUnconditionally("increment", { by: 100 });
      const synced = sync.synced();
      const waiting = [codeOf(update), codeOf(command), codeOf(synced)];
      const pending = queued.update("increment", { by: 1000 });
      expect((await pending.queued).durable).toBe(true);
      // ... and end with CONNECTION_CLOSED once it gives up and closes the connection.
      expect(await Promise.all(waiting)).toEqual(Array(3).fill("CONNECTION_CLOSED"));
      expect(await codeOf(pending)).toBe("CONNECTION_CLOSED");
      expect(nc.isClosed()).toBe(true);
      expect(sync.status).toBe("stalled");
      expect(sync.stallReason?.code).toBe("CONNECTION_CLOSED");
      expect(errors.map((e) => e.code)).toEqual(["CONNECTION_CLOSED"]);
      expect(sync.writable).toBe(false);
      expect(sync.state.count).toBe(1);
      expect(queued.pendingCount).toBe(1);
      await sync.close();
      await queued.close();
      // The queued update was kept in the pending store: a later open commits it, once.
      await server.restart();
      const again = await openSynchronizer({
        ...common,
        servers: server.url,
        snapshotKey: "queued",
        pending: { owner: "device-1" },
      });
      try {
        await again.flush();
        expect(again.pendingCount).toBe(0);
        expect(again.state.count).toBe(1001);
      } finally {
        await again.close();
      }
    } finally {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
