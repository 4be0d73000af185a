import { createServer, type AddressInfo } from "node:net";
import { startNatsServer, type NatsServer, type StateSyncError } from "@statesync/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectInBackground } from "../src/background-connect.js";

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

/** The options nats.js kept for a connection (its implementation's `options`). */
const optionsOf = (nc: object) => (nc as { options: Record<string, unknown> }).options;

describe("connectInBackground (the connection openSynchronizer owns)", () => {
  it("turns nats.js's per-request stack traces off and reconnects forever, unless told otherwise", async () => {
    const plain = connectInBackground({ servers: server.url });
    const told = connectInBackground({
      servers: server.url,
      noAsyncTraces: false,
      maxReconnectAttempts: 3,
    });
    try {
      const a = optionsOf(await plain.connection);
      expect(a.noAsyncTraces).toBe(true);
      expect(a.maxReconnectAttempts).toBe(-1);
      const b = optionsOf(await told.connection);
      expect(b.noAsyncTraces).toBe(false);
      expect(b.maxReconnectAttempts).toBe(3);
    } finally {
      await plain.cancel();
      await told.cancel();
    }
  });
});

/**
 * A server shutting down (a restart) accepts a connection and closes it before it said anything.
 * The check that a server speaks before nats.js is given the attempt (server-preflight.ts)
 * listened for socket errors only, and a close without an error was waited on for the whole
 * `timeout`: a replica that dialled at that moment stayed offline 20 s. Outcome: the first
 * failure reported is nats.js's own (the socket closed), not "sent nothing within 60000 ms".
 */
describe("a server that closes each connection before it says anything", () => {
  it("fails the attempt at once and retries, instead of waiting out the connect timeout", async () => {
    const closer = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => closer.listen(0, "127.0.0.1", resolve));
    const { port } = closer.address() as AddressInfo;
    const bg = connectInBackground({ servers: `127.0.0.1:${port}`, timeout: 60_000 });
    try {
      const first = await new Promise<StateSyncError>((resolve) => bg.errors(resolve));
      expect(first.code).toBe("UNAVAILABLE");
      expect(first.message).not.toContain("sent nothing");
      expect(first.message).toContain(`127.0.0.1:${port}`);
    } finally {
      await bg.cancel();
      await new Promise((resolve) => closer.close(resolve));
    }
  }, 30_000);
});

/**
 * A server that is down (nothing listens: the connection is refused). The check above listens
 * for "close"; a socket's "error" event with no listener is thrown by Node, and the refused dial
 * crashed the whole process (`openSynchronizer` against a stopped server, or `statesync info`
 * with a wrong port: "Unhandled 'error' event ... ECONNREFUSED") instead of reporting it and
 * retrying. Outcome: the attempt fails UNAVAILABLE naming the server, and the process lives on.
 */
describe("a server that refuses the connection (nothing listens)", () => {
  it("reports UNAVAILABLE; no socket error escapes to the process", async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const escaped: unknown[] = [];
    const onUncaught = (error: unknown) => escaped.push(error);
    process.on("uncaughtException", onUncaught);
    const bg = connectInBackground({ servers: `127.0.0.1:${port}`, timeout: 60_000 });
    try {
      // The preflight's dial fails before nats.js's own, which is the error reported.
      const first = await new Promise<StateSyncError>((resolve) => bg.errors(resolve));
      expect(first.code).toBe("UNAVAILABLE");
      expect(first.message).toContain(`127.0.0.1:${port}`);
      expect(escaped).toEqual([]);
    } finally {
      process.off("uncaughtException", onUncaught);
      await bg.cancel();
    }
  }, 30_000);
});
