import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getFreePort, startNatsServer, type NatsServer } from "@statesync/node";
import { tcp, uniqueStream, websocket } from "./helpers.js";
import { History, type LedgerSync } from "./support/checker.js";
import { V3 } from "./support/client-lines.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "./support/workload.js";

/**
 * Browsers at the edge (README "Beyond one server"): a leaf node without JetStream in front of a
 * hub that holds the stream in JetStream domain `hub`. nats-server denies plain `$JS.API.>`
 * across a leaf connection (nats-server PR 2693), so clients of the leaf (TCP and WebSocket)
 * give `domain: "hub"` and reach the hub's JetStream as `$JS.hub.API.>`. Replicas on both servers
 * write and converge, every acknowledged update counted once (history checker).
 */
let hub: NatsServer;
let leaf: NatsServer;
beforeAll(async () => {
  const leafPort = await getFreePort();
  hub = await startNatsServer({
    serverName: "hub",
    jetstream: { domain: "hub" },
    extraConfig: `leafnodes {\n  listen: "127.0.0.1:${leafPort}"\n}`,
  });
  leaf = await startNatsServer({
    serverName: "leaf",
    jetstream: false,
    extraConfig: `leafnodes {\n  remotes: [ { url: "nats-leaf://127.0.0.1:${leafPort}" } ]\n}`,
  });
  // The leaf is ready before its connection to the hub is: wait until the hub's JetStream
  // answers through it.
  const deadline = Date.now() + 20_000;
  for (;;) {
    const nc = await tcp(leaf.url);
    try {
      await (await nc.jetstreamManager({ timeout: 1_000, domain: "hub" })).getAccountInfo();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      await nc.close();
    }
  }
});
afterAll(async () => {
  await leaf?.stop();
  await hub?.stop();
});

describe("a leaf node in front of the hub", () => {
  it("replicas on the hub and on the leaf (TCP and WebSocket, nats.js v2 and v3) write and converge", async () => {
    const stream = uniqueStream("LEAF");
    const replicas: Record<string, LedgerSync> = {
      hub: await openLedger({ servers: hub.url, stream, clientId: "hub" }),
      leafTcp: await openLedger({ servers: leaf.url, stream, domain: "hub", clientId: "leafTcp" }),
      leafWs: await openLedger({
        connection: await websocket(leaf.wsUrl),
        stream,
        domain: "hub",
        clientId: "leafWs",
      }),
      leafV3: await openLedger({
        connection: await V3.websocket(leaf.wsUrl),
        ...V3.logOptions,
        stream,
        domain: "hub",
        clientId: "leafV3",
      }),
    };
    closeAtEnd(...Object.values(replicas));
    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(history, [
      { name: "hub", sync: replicas.hub!, kind: "mixed" },
      { name: "leafTcp", sync: replicas.leafTcp!, kind: "conditional" },
      { name: "leafWs", sync: replicas.leafWs!, kind: "unconditional" },
      { name: "leafV3", sync: replicas.leafV3!, kind: "mixed" },
    ]);
    try {
      await workload.waitForOk(60);
    } finally {
      await workload.stop();
    }
    const verdict = await verify(history, replicas);
    expect(verdict.stats.ok).toBeGreaterThanOrEqual(60);
    // All three were live followers, each at the same revision as the hub's log.
    const revisions = new Set(Object.values(replicas).map((r) => r.revision));
    expect(revisions.size).toBe(1);
  }, 60_000);
});
