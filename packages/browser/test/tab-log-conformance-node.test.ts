// The RevisionedLog conformance suite (`@statesync/core/testing`) run against a follower tab's
// TabLog, over a leading tab's JetStreamLog on a shared stream of a real nats-server (over
// WebSocket: the `ws` package stands in for the browser's). TabLog has `otherStateAt`, so the
// suite's cases of it run too: a follower tab tells another key's entry from its own.
import { JetStreamLog } from "@statesync/browser";
import { runRevisionedLogConformance } from "@statesync/core/testing";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { connect, type NatsConnection } from "nats.ws";
import WebSocket from "ws";
import { afterAll, beforeAll } from "vitest";
import { openTabLog } from "../src/tabs/open-tab-log.js";
import type { TabLog } from "../src/tabs/tab-log.js";
import { FakeLocks, FakeStorage } from "./support/fake-tabs.js";

let server: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  server = await startNatsServer();
  nc = await connect({ servers: server.wsUrl });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

async function until(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}

let streams = 0;

runRevisionedLogConformance("TabLog, a follower tab (shared stream, WebSocket)", async () => {
  const stream = `TABCONF_${process.pid}_${Date.now().toString(36)}_${++streams}`;
  const support = { locks: new FakeLocks(), tokens: new FakeStorage() };
  const open = () =>
    openTabLog(stream, support, { servers: server.wsUrl }, { stream, key: "k1" }).log;
  const lead: TabLog = open();
  await until(() => lead.leading && lead.status === "online");
  const follower = open();
  await until(() => follower.followsAnother && follower.status === "online");
  const others: JetStreamLog[] = [];
  const direct = (key: string) => {
    const log = new JetStreamLog({ connection: nc, stream, key });
    others.push(log);
    return log;
  };
  return {
    log: follower,
    seesSiblingEntries: true,
    openAnother: async () => direct("k1"),
    openSibling: async () => direct("k1-sibling"),
    teardown: async () => {
      await Promise.all(others.map((o) => o.close()));
      await lead.close();
      const jsm = await nc.jetstreamManager();
      await jsm.streams.delete(stream).catch(() => undefined);
    },
  };
});
