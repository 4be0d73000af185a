// @statesync/browser's openSynchronizer, run in Node against real nats-server processes over
// WebSocket (Node 20 has no global WebSocket: the `ws` package stands in for the browser's).
import {
  isStateSyncError,
  jetStreamSnapshotKey,
  MemorySnapshotStore,
  openSynchronizer,
  type SnapshotStoreWarning,
} from "@statesync/browser";
import { getFreePort, startNatsServer, type NatsServer } from "@statesync/node";
import { connect } from "nats.ws";
import WebSocket from "ws";
import { afterEach, beforeAll, expect, it } from "vitest";
import { tally as counter } from "../../node/test/support/models.js";

beforeAll(() => {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
});

const servers: NatsServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

async function until(fn: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}

let counterStreams = 0;
const stream = () => `B_${process.pid}_${Date.now().toString(36)}_${++counterStreams}`;

it("opens at once while the server is down, connects when it comes up, and closes", async () => {
  const wsPort = await getFreePort();
  const sync = await openSynchronizer({
    servers: `ws://127.0.0.1:${wsPort}`,
    stream: stream(),
    model: counter,
    snapshots: new MemorySnapshotStore(),
  });
  expect(["connecting", "offline"]).toContain(sync.status);
  servers.push(await startNatsServer({ wsPort }));
  await until(() => sync.status === "live");
  const { revision } = await sync.update("add", { by: 2 });
  expect(sync.state).toEqual({ n: 2 });
  expect(revision).toBeGreaterThan(1);
  await sync.close();
  expect(sync.status).toBe("closed");
});

it("waits for the server with waitFor: synced, and leaves a given connection open", async () => {
  const server = await startNatsServer();
  servers.push(server);
  const nc = await connect({ servers: server.wsUrl });
  const name = stream();
  const writer = await openSynchronizer({
    connection: nc,
    stream: name,
    model: counter,
    snapshots: false,
  });
  await writer.update("add", { by: 5 });
  const reader = await openSynchronizer({
    servers: server.wsUrl,
    stream: name,
    model: counter,
    snapshots: false,
    waitFor: "synced",
  });
  expect(reader.state).toEqual({ n: 5 });
  expect(reader.status).toBe("live");
  await Promise.all([reader.close(), writer.close()]);
  expect(nc.isClosed()).toBe(false);
  await nc.close();
});

it("takes a nats.js v3 wsconnect connection with the jetstream functions, beside nats.ws", async () => {
  const server = await startNatsServer();
  servers.push(server);
  const { wsconnect } = await import("@nats-io/nats-core");
  const { jetstream, jetstreamManager } = await import("@nats-io/jetstream");
  const v3 = await wsconnect({ servers: server.wsUrl });
  const name = stream();
  const writer = await openSynchronizer({
    connection: v3,
    jetstream: { jetstream, jetstreamManager },
    stream: name,
    model: counter,
    snapshots: false,
    waitFor: "synced",
  });
  await writer.update("add", { by: 7 });
  const reader = await openSynchronizer({
    servers: server.wsUrl,
    stream: name,
    model: counter,
    snapshots: false,
    waitFor: "synced",
  });
  expect(reader.state).toEqual({ n: 7 });
  await Promise.all([reader.close(), writer.close()]);
  expect(v3.isClosed()).toBe(false);
  await v3.close();
});

it("refuses a v3 connection without the jetstream functions (VALIDATION)", async () => {
  const server = await startNatsServer();
  servers.push(server);
  const { wsconnect } = await import("@nats-io/nats-core");
  const v3 = await wsconnect({ servers: server.wsUrl });
  const err = await openSynchronizer({
    connection: v3,
    stream: stream(),
    model: counter,
    snapshots: false,
  }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isStateSyncError(err, "VALIDATION"), String(err)).toBe(true);
  expect(String((err as Error).message)).toMatch(/@nats-io\/jetstream/);
  await v3.close();
});

// A browser cannot dial TCP: `tls://` (and `nats://`) cannot be honoured, so they are refused
// naming `wss://`, which is TLS the WebSocket itself enforces. Before, the message only said
// "must be ws:// or wss://", leaving a `tls://` user to guess whether TLS would be kept.
it("refuses tls:// and nats:// servers (VALIDATION), pointing at wss://", async () => {
  for (const servers of [
    "tls://127.0.0.1:4443",
    ["wss://127.0.0.1:8443", "nats://127.0.0.1:4222"],
  ]) {
    const err = await openSynchronizer({ servers, stream: stream(), model: counter }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isStateSyncError(err, "VALIDATION"), String(err)).toBe(true);
    expect(String((err as Error).message)).toMatch(
      /(tls|nats):\/\/ is a TCP URL, which a browser cannot dial: use wss:\/\//,
    );
  }
});

// A new user's trial (Node package, same check here): hosts joined by commas passed as one host
// named "n1,n2", retried for ever; and `servers: 7` read zod's bare "Invalid input".
it("refuses a host no name or address can be, and says what servers takes (VALIDATION)", async () => {
  for (const servers of ["ws://n1,n2:8080", ["wss://n1!:8443"], "ws://127.0.0.1,127.0.0.2", 7]) {
    const err = await openSynchronizer({ servers, stream: stream(), model: counter } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isStateSyncError(err, "VALIDATION"), String(err)).toBe(true);
    expect(String((err as Error).message)).toMatch(/servers must be (a )?ws:\/\/ or wss:\/\//);
    expect(String((err as Error).message)).not.toMatch(/Invalid input(?!:)/);
  }
});

// A fresh-eyes trial (Node package, same options here): connectOptions.servers was ignored in
// silence, and so were connect options beside a given connection.
it("refuses connectOptions.servers, and connectOptions beside a connection (VALIDATION)", async () => {
  const cases = [
    { servers: "ws://127.0.0.1:1", connectOptions: { servers: "ws://127.0.0.1:2" } },
    { connection: new Promise(() => undefined), connectOptions: { user: "u" } },
  ];
  for (const c of cases) {
    const err = await openSynchronizer({ ...c, stream: stream(), model: counter } as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isStateSyncError(err, "VALIDATION"), String(err)).toBe(true);
    expect(String((err as Error).message)).toMatch(/connectOptions/);
  }
});

it("falls back to memory, with one warning, where there is no IndexedDB", async () => {
  const server = await startNatsServer();
  servers.push(server);
  const warnings: SnapshotStoreWarning[] = [];
  const sync = await openSynchronizer({
    servers: server.wsUrl,
    stream: stream(),
    model: counter,
    onWarning: (w) => warnings.push(w),
    snapshotEvery: 1,
    waitFor: "synced",
  });
  await sync.update("add", { by: 1 });
  await sync.update("add", { by: 1 });
  await sync.saveSnapshot();
  expect(sync.stats.snapshotsSaved).toBeGreaterThan(0);
  expect(warnings.map((w) => w.reason)).toEqual(["unavailable"]);
  await sync.close();
});

it("keeps the given store current after every update by default, without close (issue 10, case 9)", async () => {
  const server = await startNatsServer();
  servers.push(server);
  const store = new MemorySnapshotStore();
  const name = stream();
  const sync = await openSynchronizer({
    servers: server.wsUrl,
    stream: name,
    model: counter,
    snapshots: store,
    waitFor: "synced",
  });
  for (let i = 0; i < 3; i++) await sync.update("add", { by: 1 });
  const latest = sync.revision;
  await until(() => sync.stats.snapshotsSaved > 0 && sync.revision === latest);
  let stored: number | undefined;
  await until(() => {
    void store.load(jetStreamSnapshotKey({ stream: name })).then((r) => (stored = r?.revision));
    return stored === latest;
  });
  await sync.close();
});
