// @statesync/browser's openSynchronizer on its tabs path (Web Locks and localStorage stood in
// for, as in the other tab tests), in Node against a real nats-server over WebSocket. Before,
// the tabs path passed `domain` and `fanout` to the engine instead of the leading tab's log:
// createSynchronizer refused them, so a page of a browser with Web Locks that gave either
// never opened (while the same options worked with `tabs: false`).
import { openSynchronizer, type StateSynchronizer } from "@statesync/browser";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { connect } from "nats.ws";
import WebSocket from "ws";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { FakeLocks, FakeStorage } from "./support/fake-tabs.js";
import { tally as counter } from "../../node/test/support/models.js";

/** Web Locks that count the requests: the tabs path asks for the leadership lock. */
class CountedLocks extends FakeLocks {
  requests = 0;
  override request(name: string, callback: (lock: unknown) => Promise<void>) {
    this.requests += 1;
    return super.request(name, callback);
  }
}

const g = globalThis as { WebSocket?: unknown; navigator?: unknown; localStorage?: unknown };
const saved = { navigator: g.navigator, localStorage: g.localStorage };
let locks: CountedLocks;
let hub: NatsServer;
const closing: Array<StateSynchronizer<{ n: number }, (typeof counter)["commands"]>> = [];

beforeAll(async () => {
  g.WebSocket ??= WebSocket;
  hub = await startNatsServer({ jetstream: { domain: "hub" } });
});
afterEach(async () => {
  for (const sync of closing.splice(0)) await sync.close();
  g.navigator = saved.navigator;
  g.localStorage = saved.localStorage;
});
afterAll(async () => {
  await hub?.stop();
});

function tabsOn(): void {
  locks = new CountedLocks();
  g.navigator = { locks };
  g.localStorage = new FakeStorage();
}

let streams = 0;
const stream = () => `TL_${process.pid}_${Date.now().toString(36)}_${++streams}`;

it("opens with domain on the tabs path, and writes through the domain's API", async () => {
  tabsOn();
  const sync = await openSynchronizer({
    servers: hub.wsUrl,
    stream: stream(),
    model: counter,
    snapshots: false,
    domain: "hub",
  });
  closing.push(sync);
  expect(locks.requests).toBeGreaterThan(0);
  const { revision } = await sync.update("add", { by: 3 });
  expect(sync.state).toEqual({ n: 3 });
  expect(revision).toBeGreaterThan(0);
});

it("opens with fanout on the tabs path: the leading tab's log creates the republishing stream", async () => {
  tabsOn();
  const name = stream();
  const sync = await openSynchronizer({
    servers: hub.wsUrl,
    stream: name,
    model: counter,
    snapshots: false,
    domain: "hub",
    fanout: true,
  });
  closing.push(sync);
  expect(locks.requests).toBeGreaterThan(0);
  await sync.update("add", { by: 2 });
  expect(sync.state).toEqual({ n: 2 });
  const nc = await connect({ servers: hub.wsUrl });
  try {
    const jsm = await nc.jetstreamManager({ domain: "hub" });
    const info = await jsm.streams.info(name);
    expect(info.config.republish?.dest).toBeTruthy();
  } finally {
    await nc.close();
  }
});
