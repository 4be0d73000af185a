// nats.ws connection attempts against a real nats-server's WebSocket port behind a proxy that
// cuts connections during the handshake (a server shutting down for a restart), in Node with
// the `ws` package as the browser's WebSocket.
import {
  createServer,
  connect as dial,
  type AddressInfo,
  type Server,
  type Socket,
} from "node:net";
import { getFreePort, startNatsServer, type NatsServer } from "@statesync/node";
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

/** A TCP proxy to the server's WebSocket port that can cut connections during the handshake. */
interface CuttingProxy {
  readonly url: string;
  /** Connections still to cut, each after the server's first bytes (or the upgrade's answer). */
  cuts: number;
  /** Cut after the HTTP answer to the upgrade alone, before the server's INFO. */
  headOnly: boolean;
  /** Drops every connection it passes (a server that went away). */
  dropAll(): void;
  close(): Promise<void>;
}

async function cuttingProxy(cuts: number): Promise<CuttingProxy> {
  const passed = new Set<Socket>();
  const proxy: Server = createServer((client) => {
    const upstream = dial(server.wsPort, "127.0.0.1");
    const cut = state.cuts > 0;
    if (cut) state.cuts -= 1;
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.pipe(upstream);
    if (!cut) {
      upstream.pipe(client);
      passed.add(client);
      client.on("close", () => passed.delete(client));
      return;
    }
    upstream.once("data", (chunk: Buffer) => {
      const head = chunk.indexOf("\r\n\r\n");
      client.write(state.headOnly && head >= 0 ? chunk.subarray(0, head + 4) : chunk);
      client.destroy();
      upstream.destroy();
    });
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const { port } = proxy.address() as AddressInfo;
  const state: CuttingProxy = {
    url: `ws://127.0.0.1:${port}`,
    cuts,
    headOnly: false,
    dropAll: () => passed.forEach((s) => s.destroy()),
    close: () => new Promise((resolve) => proxy.close(() => resolve())),
  };
  return state;
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

  /**
   * nats.ws's own reconnects too: one whose WebSocket closed before the server's INFO waited out
   * the 20 s `timeout` before it dialled again. Outcome: the connection is back after the cut.
   * (One closed after INFO and before the handshake's PONG still waits: README, a known gap.)
   */
  it("reconnects after a reconnect attempt cut before the server's INFO", async () => {
    const proxy = await cuttingProxy(0);
    const bg = connectInBackground({ servers: proxy.url, token: "s3cret" });
    try {
      const nc = await bg.connection;
      const back = (async () => {
        for await (const s of nc.status()) if (s.type === "reconnect") return true;
        return false;
      })();
      proxy.cuts = 1;
      proxy.headOnly = true;
      proxy.dropAll();
      expect(await back).toBe(true);
      await nc.flush();
      expect(proxy.cuts).toBe(0);
    } finally {
      await bg.cancel();
      await proxy.close();
    }
  }, 15_000);

  /**
   * A refused server first in the list, and a user's `wsFactory` that takes a moment (it awaits
   * something before making the socket): the refused socket's close was taken for a server that
   * cut the handshake, since no newer socket existed yet a turn later, and the attempt rejected
   * `UNAVAILABLE` though nats.ws was dialling the next server, which answers. Outcome: connected.
   */
  it("a refused server before one that answers, with a wsFactory that takes a moment", async () => {
    const refused = `ws://127.0.0.1:${await getFreePort()}`;
    const wsFactory = async (url: string) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { socket: new WebSocket(url) as unknown as globalThis.WebSocket, encrypted: false };
    };
    const options = { servers: [refused, server.wsUrl], noRandomize: true, token: "s3cret" };
    const nc = await connectWs({ ...options, wsFactory } as Parameters<typeof connectWs>[0]);
    expect(nc.isClosed()).toBe(false);
    await nc.close();
  }, 15_000);
});
