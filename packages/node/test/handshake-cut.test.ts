import { openSynchronizer, type SynchronizerOf as SyncOf } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { nextStatus, uniqueStream, useNatsServer } from "./helpers.js";
import { CLIENT_LINES } from "./support/client-lines.js";
import { counter } from "./support/models.js";
import { TcpProxy } from "./support/tcp-proxy.js";

/**
 * A live connection is lost, and the reconnection attempt nats.js then makes by itself is cut in
 * the middle of its handshake: the server's INFO reached the client, its CONNECT never reached
 * the server (a server shutting down, a proxy or load balancer cutting connections). nats.js
 * waited for that attempt's PONG on the closed socket until its connect `timeout` (20 s by
 * default) before trying again: a fault trial saw replicas `offline` 20 to 42 s after the cutting
 * had stopped. Here the timeout is 10 minutes, so a replica that waits it out never comes back
 * within the test; it must reconnect, and an update commit, at the next attempt. (Outcome, not
 * timing: the test's timeout only bounds how long it may take.)
 */
const ctx = useNatsServer();
const SLOW = { timeout: 600_000, pingInterval: 600_000, reconnectTimeWait: 100 };

/** Cuts the live connection, and the reconnection attempt after it mid-handshake. */
async function cutTwice(proxy: TcpProxy, sync: Parameters<typeof nextStatus>[0]): Promise<void> {
  const handshakeCut = proxy.cutNextHandshake();
  const offline = nextStatus(sync, "offline");
  proxy.cutAll();
  await Promise.all([handshakeCut, offline]);
}

/** Commits, has both cuts made, is `live` again and commits again. */
async function commitsAcrossCuts(proxy: TcpProxy, sync: SyncOf<typeof counter>): Promise<void> {
  await sync.update("increment", { by: 1 });
  await cutTwice(proxy, sync);
  await nextStatus(sync, "live");
  await sync.update("increment", { by: 1 });
  expect(sync.state.count).toBe(2);
}

describe("a reconnection cut mid-handshake", () => {
  it("a replica opened with servers reconnects at the next attempt", async () => {
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    const sync = await openSynchronizer({
      servers: proxy.url,
      stream: uniqueStream("HANDSHAKE_CUT"),
      model: counter,
      snapshots: false,
      connectOptions: SLOW,
    });
    try {
      await commitsAcrossCuts(proxy, sync);
    } finally {
      await sync.close();
      await proxy.stop();
    }
  }, 60_000);
});

describe("a first connection cut mid-handshake", () => {
  it("is tried again at once, and the connection made reconnects after a cut", async () => {
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    const handshakeCut = proxy.cutNextHandshake();
    const sync = await openSynchronizer({
      servers: proxy.url,
      stream: uniqueStream("FIRST_HANDSHAKE_CUT"),
      model: counter,
      snapshots: false,
      connectOptions: SLOW,
    });
    try {
      await handshakeCut;
      await nextStatus(sync, "live");
      await commitsAcrossCuts(proxy, sync); // the connection still reconnects, as nats.js does
    } finally {
      await sync.close();
      await proxy.stop();
    }
  }, 60_000);
});

describe.each(CLIENT_LINES)("a reconnection cut mid-handshake, nats.js $name", (line) => {
  it("a passed-in connection reconnects at the next attempt", async () => {
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    const nc = await line.tcp(proxy.url, SLOW);
    const sync = await openSynchronizer({
      connection: nc,
      ...line.logOptions,
      stream: uniqueStream("HANDSHAKE_CUT_NC"),
      model: counter,
      snapshots: false,
    });
    try {
      await commitsAcrossCuts(proxy, sync);
    } finally {
      await sync.close();
      await nc.close();
      await proxy.stop();
    }
  }, 60_000);
});
