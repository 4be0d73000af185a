import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer, type NatsV3ConnectionLike } from "@statesync/node";
import { uniqueStream } from "../helpers.js";
import { CLIENT_LINES, type Closable } from "../support/client-lines.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { openLedger, sleep } from "../support/workload.js";

/**
 * A read's request in flight when the connection drops (the consumer a replica's catch-up read
 * creates) ends at once and is tried again, instead of waiting out the request timeout: nats.js
 * fails no request whose connection is lost (cut-short.ts).
 */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

describe.each(CLIENT_LINES)("a read cut while its consumer is created, nats.js $name", (line) => {
  it("the replica opens and catches up before the request timeout", async () => {
    const stream = uniqueStream("CUTREAD");
    const owned: Closable[] = [];
    const seed = await openLedger({ servers: server.url, stream, clientId: "s" });
    for (let i = 0; i < 3; i++) await seed.update("increment", { by: 1, opId: `s.${i}` });
    await seed.close();
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: server.port });
    try {
      const cut = proxy.cutAfterPublish((s) => s.startsWith("$JS.API.CONSUMER.CREATE."));
      const requestTimeoutMs = 60_000;
      const opening =
        line.name === "v2"
          ? openLedger({ servers: proxy.url, stream, clientId: "r", requestTimeoutMs })
          : line.tcp(proxy.url, { reconnectTimeWait: 100, pingInterval: 1_000 }).then((nc) => {
              owned.push(nc);
              const connection = nc as NatsV3ConnectionLike;
              return openLedger({ connection, stream, clientId: "r", requestTimeoutMs });
            });
      await cut;
      // Before, the open waited out the 60 s request timeout of the cut consumer creation.
      const first = await Promise.race([opening, sleep(20_000).then(() => "stuck" as const)]);
      expect(first).not.toBe("stuck");
      if (first === "stuck") return;
      try {
        const caughtUp = first.waitFor(3).then(() => "caught up" as const);
        expect(await Promise.race([caughtUp, sleep(20_000).then(() => "stuck")])).toBe("caught up");
        expect(first.state.count).toBe(3);
      } finally {
        await first.close();
      }
    } finally {
      await Promise.all(owned.map((nc) => nc.close()));
      await proxy.stop();
    }
  }, 40_000);
});
