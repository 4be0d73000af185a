import net from "node:net";
import { connectNats, startNatsServer, type NatsServer } from "@statesync/node";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * A list of servers whose first to answer fails each connection after accepting it (here one at
 * its `max_connections`: INFO, then `-ERR` and close; a server shutting down does the same) and
 * whose other one is healthy. The first connection, made without reconnecting, ended at the
 * failing server instead of going on to the next (nats.js goes on when it may reconnect), and
 * each new attempt dialled the same one first again (it answers first): the replica stayed
 * `offline` for good. Outcome: the connection is made, to the healthy server.
 */
let full: NatsServer;
let healthy: NatsServer;
let holder: NatsConnection;
let slow: net.Server;
beforeAll(async () => {
  full = await startNatsServer({ extraConfig: "max_connections: 1" });
  holder = await connect({ servers: full.url });
  healthy = await startNatsServer();
  // The healthy server answers later than the full one (so that the full one is dialled first).
  slow = net.createServer((client) => {
    const upstream = net.connect(healthy.port, "127.0.0.1");
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => setTimeout(() => client.destroy(), 300));
    client.pipe(upstream);
    upstream.on("data", (chunk: Buffer) => setTimeout(() => client.write(chunk), 200));
  });
  await new Promise<void>((resolve) => slow.listen(0, "127.0.0.1", resolve));
});
afterAll(async () => {
  await holder?.close();
  await new Promise((resolve) => slow?.close(resolve));
  await full?.stop();
  await healthy?.stop();
});

describe("a first connection to a list whose first server to answer is full", () => {
  it("goes on to the next server", async () => {
    const slowUrl = `nats://127.0.0.1:${(slow.address() as net.AddressInfo).port}`;
    const nc = await connectNats({ servers: [full.url, slowUrl] });
    try {
      expect(nc.getServer()).toBe(slowUrl.replace("nats://", ""));
      await nc.flush();
    } finally {
      await nc.close();
    }
  });
});
