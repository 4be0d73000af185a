import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JetStreamLog, type StateSyncError } from "@statesync/core";
import { getFreePort, openSynchronizer, startNatsServer, type NatsServer } from "@statesync/node";
import { rejection, tcp, uniqueStream, until, websocket } from "./helpers.js";
import { History, type LedgerSync } from "./support/checker.js";
import { V3 } from "./support/client-lines.js";
import { counter } from "./support/models.js";
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

/**
 * Issue 13 (fresh-eyes trial): a client of the leaf opened without `domain` stayed `offline`
 * with no event at all (the hub's JetStream answers `$JS.API` only as `$JS.hub.API` there, so
 * every request got 503 no responders). It now says why, once, and keeps trying.
 */
describe("a leaf client without the hub's domain", () => {
  it("reports UNAVAILABLE naming the domain option, once, is not writable, and keeps trying", async () => {
    const errors: StateSyncError[] = [];
    const sync = await openSynchronizer({
      servers: leaf.url,
      stream: uniqueStream("NODOMAIN"),
      model: counter,
      snapshots: false,
      onError: (e) => errors.push(e),
    });
    try {
      expect(sync.status).toBe("offline");
      const first = await until(() => errors[0]);
      expect(first.code).toBe("UNAVAILABLE");
      expect(first.message).toMatch(/JetStream is not reachable in this account/);
      expect(first.message).toMatch(/`domain` option/);
      expect(first.details).toMatchObject({ jetstream: "unreachable", persistent: true });
      expect(sync.writable).toBe(false);
      expect(sync.writeError).toBe(first);
      // The same answer on every attempt: reported once.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(sync.status).toBe("offline");
      expect(errors).toHaveLength(1);
      // An update fails at once, and says why and what to change (before: only "could not be
      // written or read yet", the hint was in the event alone; fresh-eyes trial).
      const refused = await rejection(sync.update("increment", { by: 1 }));
      expect(refused.code).toBe("UNAVAILABLE");
      expect(refused.message).toMatch(/`domain` option/);
      expect(refused.details).toMatchObject({ jetstream: "unreachable", persistent: true });
      // It keeps trying: once the leaf forwards `$JS.API.>` to the hub's domain (a subject
      // mapping done by hand here), the replica opens, goes live and writes.
      const forwarder = await tcp(leaf.url);
      try {
        forwarder.subscribe("$JS.API.>", {
          callback: (_e, m) =>
            forwarder.publish(m.subject.replace(/^\$JS\.API\./, "$JS.hub.API."), m.data, {
              reply: m.reply,
              ...(m.headers ? { headers: m.headers } : {}),
            }),
        });
        await forwarder.flush();
        await until(() => (sync.status === "live" ? true : undefined), 20_000);
        expect(sync.writable).toBe(true);
        expect((await sync.update("increment", { by: 1 })).state.count).toBe(1);
      } finally {
        await forwarder.close();
      }
    } finally {
      await sync.close();
    }
  });

  it.each([
    ["v2 TCP", () => tcp(leaf.url), {}],
    ["v3 WebSocket", () => V3.websocket(leaf.wsUrl), V3.logOptions],
  ] as const)(
    "JetStreamLog.open over %s rejects with the same typed error",
    async (_, connect, extra) => {
      const nc = await connect();
      try {
        const error = await rejection(
          JetStreamLog.open({ connection: nc, ...extra, stream: uniqueStream("NODOMAIN") }),
        );
        expect(error.code).toBe("UNAVAILABLE");
        expect(error.message).toMatch(
          /JetStream is not reachable in this account.*`domain` option/,
        );
        expect(error.details).toMatchObject({ jetstream: "unreachable", persistent: true });
        // With a domain that does not exist the message names it.
        const wrong = await rejection(
          JetStreamLog.open({
            connection: nc,
            ...extra,
            stream: uniqueStream("NODOMAIN"),
            domain: "nohub",
          }),
        );
        expect(wrong.message).toMatch(/domain "nohub"/);
      } finally {
        await nc.close();
      }
    },
  );
});
