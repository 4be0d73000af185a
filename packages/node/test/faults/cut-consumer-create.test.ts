import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer, type NatsV3ConnectionLike } from "@statesync/node";
import { uniqueStream } from "../helpers.js";
import { CLIENT_LINES, type Closable } from "../support/client-lines.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { openLedger } from "../support/workload.js";

/**
 * Found in CI (lost-ack.test.ts timed out, once) and reproduced with a stalling event loop: a
 * replica's `close()` took its whole `requestTimeoutMs` (60 s there). Its follower's consumer
 * creation had been sent just before the connection was cut; the follower gave up on it at the
 * cut (cut-short.ts) and made another, but `stop()` still waited for the first to settle, and
 * nats.js settles a request whose connection was lost only at its timeout. Here the proxy cuts
 * the connection right after the follower's creation request, every time: `close()` must not
 * wait for an answer that cannot come (outcome: it resolves well before that timeout would).
 */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

/** A follower's consumer creation (its consumers are named `ssf_...`). */
const followerCreate = (subject: string) =>
  subject.startsWith("$JS.API.CONSUMER.CREATE.") && subject.includes(".ssf_");

describe.each(CLIENT_LINES)("a follower's consumer creation cut, nats.js $name", (line) => {
  it("close() does not wait out the request timeout for the lost answer", async () => {
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: server.port });
    const owned: Closable[] = [];
    try {
      const cut = proxy.cutAfterPublish(followerCreate);
      const stream = uniqueStream("CUTC");
      const requestTimeoutMs = 60_000;
      let nc: Closable | undefined;
      if (line.name === "v3") {
        nc = await line.tcp(proxy.url, { reconnectTimeWait: 100, pingInterval: 1_000 });
        owned.push(nc);
      }
      const sync = await openLedger({
        stream,
        clientId: "c",
        requestTimeoutMs,
        ...(nc ? { connection: nc as NatsV3ConnectionLike } : { servers: proxy.url }),
      });
      await cut;
      expect(proxy.cuts).toBe(1);
      // Closed while the follower waits to make its next consumer (the first one's creation is
      // still unanswered in nats.js): the replica still commits meanwhile.
      await sync.update("increment", { opId: "c.1", by: 1 });
      const closing = sync.close().then(() => "closed" as const);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<"still closing">((r) => {
        timer = setTimeout(() => r("still closing"), requestTimeoutMs / 3);
      });
      expect(await Promise.race([closing, late])).toBe("closed");
      clearTimeout(timer);
    } finally {
      await Promise.all(owned.map((c) => c.close()));
      await proxy.stop();
    }
  }, 45_000);
});
