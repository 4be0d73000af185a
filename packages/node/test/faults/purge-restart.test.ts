import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { uniqueStream } from "../helpers.js";
import { History } from "../support/checker.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { openLedger, verify } from "../support/workload.js";

/**
 * Issue 10, case 2: client w appends through a proxy; the server stores the entry, the proxy
 * drops the acknowledgement and keeps w cut off. Another client compacts, which truncates the
 * entry's position; the server is killed and restarted on the same store (it rebuilds its
 * duplicate table only from the messages it still holds). w reconnects well inside the 2-minute
 * duplicate window and re-sends: the re-send must be recognised as the original commit, and every
 * replica must count it once (the history checker). Runs on both servers of the matrix.
 */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

describe("exactly once after a purge and a server restart (real nats-server)", () => {
  for (const kind of ["unconditional", "conditional"] as const) {
    it(`${kind}: the re-send is the original commit, counted once by every replica`, async () => {
      const stream = uniqueStream("PURGE");
      const proxy = await TcpProxy.start({ host: "127.0.0.1", port: server.port });
      const history = new History();
      const w = await openLedger({ servers: proxy.url, stream, clientId: "w", live: false });
      const o = await openLedger({ servers: server.url, stream, clientId: "o" });
      history.watch("w", w);
      history.watch("o", o);
      try {
        const cut = proxy.cutAfterPublish((s) => s === `${stream}.log`, { refuseForMs: 2_500 });
        const pending = history.increment(w, "w", kind);
        await cut; // stored at revision 2; w never hears of it and stays cut off
        await o.waitFor(2);
        expect((await history.increment(o, "o", "conditional")).status).toBe("ok");
        expect((await o.compact()).revision).toBe(4); // truncates w's entry
        await server.kill("SIGKILL");
        await server.restart();
        const outcome = await pending;
        expect(outcome).toEqual({ status: "ok", revision: 2 });
        expect((await history.increment(o, "o", "conditional")).status).toBe("ok");
        const verdict = await verify(history, { w, o }, { withLog: false });
        expect(verdict.stats.ok).toBe(3);
        expect(o.state).toEqual(w.state);
      } finally {
        await Promise.all([w.close(), o.close()]);
        await proxy.stop();
      }
    });
  }
});
