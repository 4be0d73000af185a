import { startNatsServer, type NatsServer } from "@statesync/node";
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
