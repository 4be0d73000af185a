// nats.ws connection attempts against a real nats-server's WebSocket port behind a proxy that
// cuts connections during the handshake (a server shutting down for a restart), in Node with
// the `ws` package as the browser's WebSocket.
import { createServer, connect as dial, type AddressInfo, type Server } from "node:net";
import { startNatsServer, type NatsServer } from "@statesync/node";
import type { StateSyncError } from "@statesync/core";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectInBackground } from "../src/background-connect.js";
import { connectWs } from "../src/ws-connect.js";

let server: NatsServer;
beforeAll(async () => {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  server = await startNatsServer({ extraConfig: `authorization { token: "s3cret" }` });
});
afterAll(async () => {
  await server?.stop();
});

/**
 * A TCP proxy to the server's WebSocket port that, for its first `cuts` connections, passes the
 * server's first bytes (the upgrade's answer, sometimes its INFO too) and then closes both sides.
 */
async function cuttingProxy(cuts: number): Promise<{ url: string; close(): Promise<void> }> {
  let left = cuts;
  const proxy: Server = createServer((client) => {
    const upstream = dial(server.wsPort, "127.0.0.1");
    const cut = left-- > 0;
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.pipe(upstream);
    upstream.on("data", (chunk: Buffer) => {
      client.write(chunk);
      if (cut) {
        client.destroy();
        upstream.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => proxy.close(() => resolve())),
  };
}

/**
 * A trial: a tab that dialled as the server shut down for a restart stayed offline 20 s, since
 * nats.ws waits out its whole `timeout` for a socket closed before the handshake ended (before
 * the server's INFO, or before its PONG). Outcome: the first failure reported is that the server
 * closed the WebSocket (not nats.ws's TIMEOUT, 20 s later), and the next attempts connect.
 */
describe("a server that closes WebSockets during the handshake", () => {
  it("fails each such attempt at once and connects when the server answers again", async () => {
    const proxy = await cuttingProxy(3);
    const bg = connectInBackground({ servers: proxy.url, token: "s3cret" });
    const errors: StateSyncError[] = [];
    bg.errors((e) => errors.push(e));
    try {
      const nc = await bg.connection;
      expect(nc.isClosed()).toBe(false);
      expect(errors.length).toBeGreaterThan(0);
      expect(errors[0]!.code).toBe("UNAVAILABLE");
      expect(errors[0]!.details).toMatchObject({ closedEarly: true });
    } finally {
      await bg.cancel();
      await proxy.close();
    }
  }, 15_000);

  it("still reads a refused token as the server's refusal, which it sends before closing", async () => {
    const err = await connectWs({ servers: server.wsUrl, token: "wrong", reconnect: false }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(String((err as Error | undefined)?.message)).toMatch(/authoriz/i);
    expect((err as { details?: unknown }).details).toBeUndefined();
    const bg = connectInBackground({ servers: server.wsUrl, token: "wrong" });
    await expect(bg.connection).rejects.toMatchObject({ code: "PERMISSION_DENIED" });
    await bg.cancel();
  }, 15_000);
});
