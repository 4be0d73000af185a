import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer, type NatsV3ConnectionLike } from "@statesync/node";
import { uniqueStream } from "../helpers.js";
import { CLIENT_LINES, type Closable } from "../support/client-lines.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { openLedger } from "../support/workload.js";

/**
 * Found by a trial of the fix in cut-consumer-create.test.ts: when the connection is not cut but
 * stops answering right after the follower's consumer creation was sent (a frozen server, a
 * half-open TCP connection: the proxy holds it), `close()` still waits out the whole
 * `requestTimeoutMs` (30 s here; with statesync's PING interval nats.js drops the connection
 * after 20-30 s) in the follower's `stop()`, both client lines. Not waiting
 * (tried by hand) closed at once and the process exited at once, on both lines.
 */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

const followerCreate = (subject: string) =>
  subject.startsWith("$JS.API.CONSUMER.CREATE.") && subject.includes(".ssf_");

describe.each(CLIENT_LINES)("a follower's consumer creation held, nats.js $name", (line) => {
  it("close() does not wait out the request timeout for an answer that does not come", async () => {
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: server.port });
    const owned: Closable[] = [];
    try {
      const held = proxy.holdAfterPublish(followerCreate);
      const requestTimeoutMs = 30_000;
      let nc: Closable | undefined;
      if (line.name === "v3") {
        nc = await line.tcp(proxy.url, { reconnectTimeWait: 100, pingInterval: 10_000 });
        owned.push(nc);
      }
      const sync = await openLedger({
        stream: uniqueStream("HOLDC"),
        clientId: "c",
        requestTimeoutMs,
        // statesync's own PING interval (10 s): nats.js drops a connection that stopped answering
        // after two unanswered PINGs, 20-30 s (openLedger's 1 s dropped it within 3 s).
        ...(nc
          ? { connection: nc as NatsV3ConnectionLike }
          : { servers: proxy.url, connectOptions: { pingInterval: 10_000 } }),
      });
      await held;
      await new Promise((r) => setTimeout(r, 300));
      const started = Date.now();
      await sync.close();
      expect(Date.now() - started).toBeLessThan(requestTimeoutMs / 3);
    } finally {
      await Promise.all(owned.map((c) => c.close()));
      await proxy.stop();
    }
  }, 45_000);
});
