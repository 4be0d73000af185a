import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { uniqueStream, until } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "../support/workload.js";

/** The connection is cut and restored again and again (TCP proxy) while several clients update. */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

describe("a flapping connection", () => {
  const cases = [
    { layout: "own", fanout: false },
    { layout: "shared", fanout: false },
    { layout: "own", fanout: true },
    { layout: "shared", fanout: true },
  ] as const;
  for (const { layout, fanout } of cases) {
    const how = fanout ? ", fan-out followers (docs/fanout.md)" : "";
    it(`3 clients behind proxies that cut every connection about every 600 ms, 1 direct (${layout} stream${how})`, async () => {
      const name = uniqueStream("FLAP");
      const shared = fanout ? "FLAP_SHARED_FAN" : "FLAP_SHARED";
      const where = {
        ...(layout === "own" ? { stream: name } : { stream: shared, key: name }),
        // nats.js's default reconnect jitter here, not fan-out's 2 s (the cuts come every 600 ms).
        ...(fanout
          ? { fanout: { tailCheckMs: 1_000 }, connectOptions: { reconnectJitter: 100 } }
          : {}),
      };
      const proxies = await Promise.all(
        [0, 1, 2].map(() => TcpProxy.start({ host: "127.0.0.1", port: server.port })),
      );
      const replicas: Record<string, LedgerSync> = {};
      for (const [i, proxy] of proxies.entries()) {
        replicas[`p${i}`] = await openLedger({
          servers: proxy.url,
          clientId: `p${i}`,
          requestTimeoutMs: 1_000,
          ...where,
        });
      }
      replicas.d = await openLedger({ servers: server.url, clientId: "d", ...where });
      closeAtEnd(...Object.values(replicas), ...proxies);
      const history = new History();
      history.watchAll(replicas);
      const workload = startWorkload(
        history,
        [
          { name: "p0", sync: replicas.p0!, kind: "conditional" },
          { name: "p1", sync: replicas.p1!, kind: "unconditional" },
          { name: "p2", sync: replicas.p2!, kind: "mixed" },
          { name: "d", sync: replicas.d!, kind: "conditional", pauseMs: 20 },
        ],
        { update: { outcomeTimeoutMs: 3_000 } },
      );
      try {
        proxies.forEach((p, i) => p.startFlapping(600 + i * 70, 150));
        // At least 20 cuts in all (about 6 s here; longer on a loaded machine).
        const flaps = () => proxies.reduce((n, p) => n + p.flaps, 0);
        await until(() => (flaps() >= 20 ? true : undefined), 60_000);
        for (const p of proxies) p.stopFlapping();
        await workload.waitForOk(20);
      } finally {
        for (const p of proxies) p.stopFlapping();
        await workload.stop();
      }
      const verdict = await verify(history, replicas);
      expect(proxies.reduce((n, p) => n + p.flaps, 0)).toBeGreaterThanOrEqual(20);
      // The cuts hit appends in flight: they were re-sent.
      expect(
        ["p0", "p1", "p2"].reduce((n, c) => n + replicas[c]!.stats.resends, 0),
      ).toBeGreaterThan(0);
      // Every proxied client got something through, and the direct one kept going.
      for (const n of ["p0", "p1", "p2", "d"]) {
        expect(history.ops.some((o) => o.client === n && o.outcome?.status === "ok")).toBe(true);
      }
      expect(verdict.stats.ok).toBeGreaterThan(20);
    }, 180_000);
  }
});
