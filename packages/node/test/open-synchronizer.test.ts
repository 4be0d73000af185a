import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  getFreePort,
  isStateSyncError,
  openSynchronizer,
  startNatsServer,
  type NatsServer,
  type StateSyncError,
} from "@statesync/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rejection, tcp, uniqueStream, until } from "./helpers.js";
import { tally as counter } from "./support/models.js";

let server: NatsServer;
let dir: string;
beforeAll(async () => {
  server = await startNatsServer();
  dir = await mkdtemp(join(tmpdir(), "statesync-open-"));
});
afterAll(async () => {
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("openSynchronizer", () => {
  it("opens two replicas over TCP that converge, with snapshots on disk", async () => {
    const stream = uniqueStream();
    const snapshotDir = join(dir, "a");
    const a = await openSynchronizer({ servers: server.url, stream, model: counter, snapshotDir });
    const b = await openSynchronizer({
      servers: server.url,
      stream,
      model: counter,
      snapshots: false,
    });
    expect(a.status).toBe("live");
    await a.update("add", { by: 2 });
    const { revision } = await b.update("add", { by: 3 });
    await a.waitFor(revision);
    expect(a.state).toEqual({ n: 5 });
    await a.close();
    await b.close();
    expect((await readdir(snapshotDir)).length).toBe(1);
    const again = await openSynchronizer({
      servers: [server.url],
      stream,
      model: counter,
      snapshotDir,
      waitFor: "restored",
    });
    expect(again.stats.snapshotsRestored).toBe(1);
    expect(again.state).toEqual({ n: 5 });
    await again.close();
  });

  it("works in a shared stream and leaves a given connection open", async () => {
    const nc = await tcp(server.url);
    const stream = uniqueStream();
    const x = await openSynchronizer({
      connection: nc,
      stream,
      key: "tenant.x",
      model: counter,
      snapshots: false,
    });
    const y = await openSynchronizer({
      connection: nc,
      stream,
      key: "tenant.y",
      model: counter,
      snapshots: false,
    });
    await x.update("add", { by: 1 });
    await y.update("add", { by: 10 });
    await x.update("add", { by: 1 });
    expect(x.state).toEqual({ n: 2 });
    expect(y.state).toEqual({ n: 10 });
    await x.close();
    await y.close();
    expect(nc.isClosed()).toBe(false);
    await nc.close();
  });

  it("takes a nats.js v3 connection (@nats-io/jetstream imported on demand) beside a v2 replica", async () => {
    const { connect } = await import("@nats-io/transport-node");
    const v3 = await connect({ servers: server.url });
    const stream = uniqueStream();
    const a = await openSynchronizer({ connection: v3, stream, model: counter, snapshots: false });
    const b = await openSynchronizer({
      servers: server.url,
      stream,
      model: counter,
      snapshots: false,
    });
    await a.update("add", { by: 2 });
    const { revision } = await b.update("add", { by: 3 });
    await a.waitFor(revision);
    expect(a.state).toEqual({ n: 5 });
    expect(a.status).toBe("live");
    await a.close();
    await b.close();
    expect(v3.isClosed()).toBe(false);
    await v3.close();
  });

  it("takes a promise of a v3 connection with the jetstream functions given", async () => {
    const { connect } = await import("@nats-io/transport-node");
    const { jetstream, jetstreamManager } = await import("@nats-io/jetstream");
    const pending = connect({ servers: server.url });
    const sync = await openSynchronizer({
      connection: pending,
      jetstream: { jetstream, jetstreamManager },
      stream: uniqueStream(),
      key: "tenant.v3",
      model: counter,
      snapshots: false,
    });
    await sync.update("add", { by: 4 });
    expect(sync.state).toEqual({ n: 4 });
    await sync.close();
    await (await pending).close();
  });

  it("starts offline when the server is down and goes live once it is up", async () => {
    const port = await getFreePort();
    const errors: StateSyncError[] = [];
    const started = Date.now();
    const sync = await openSynchronizer({
      servers: `nats://127.0.0.1:${port}`,
      stream: uniqueStream(),
      model: counter,
      snapshots: false,
      requestTimeoutMs: 30_000,
      onError: (e) => errors.push(e),
    });
    expect(sync.status).toBe("offline");
    // Offline as soon as the connection is refused, not after the 30 s request timeout.
    expect(Date.now() - started).toBeLessThan(15_000);
    // Why it is offline is reported once, not at every retry.
    expect(errors.map((e) => e.code)).toEqual(["UNAVAILABLE"]);
    expect(errors[0]!.message).toBe(
      `cannot connect to nats://127.0.0.1:${port}: CONNECTION_REFUSED`,
    );
    const late = await startNatsServer({ port });
    try {
      await until(() => (sync.status === "live" ? true : undefined), 30_000);
      const { revision } = await sync.update("add", { by: 1 });
      expect(revision).toBeGreaterThan(0);
      expect(sync.state).toEqual({ n: 1 });
      await sync.close();
    } finally {
      await late.stop();
    }
  });

  it("closes without a server ever answering", async () => {
    const port = await getFreePort();
    const sync = await openSynchronizer({
      servers: `nats://127.0.0.1:${port}`,
      stream: uniqueStream(),
      model: counter,
      snapshots: false,
      requestTimeoutMs: 200,
    });
    await sync.close();
    expect(sync.status).toBe("closed");
  });

  it("validates its options", async () => {
    const nc = await tcp(server.url);
    const cases: unknown[] = [
      { stream: "S", model: counter },
      { servers: server.url, connection: nc, stream: "S", model: counter },
      { servers: server.url, model: counter },
      { servers: server.url, stream: "S", model: counter, snapshots: {} },
      { servers: server.url, stream: "bad.name", model: counter },
      { servers: server.url, stream: "S", key: "a..b", model: counter },
      // servers nats cannot dial over TCP (it would retry "not a url" forever, silently)
      { servers: "not a url", stream: "S", model: counter },
      { servers: "http://127.0.0.1:4222", stream: "S", model: counter },
      // A new user's typos, read as host "nats" with a path: retried ENOTFOUND for ever.
      { servers: "nats:/127.0.0.1:4222", stream: "S", model: counter },
      { servers: "nats//127.0.0.1:4222", stream: "S", model: counter },
      { servers: "nats://127.0.0.1:4222/path", stream: "S", model: counter },
      // A new user's trial: hosts joined by commas without ports passed for one host named
      // "n1,n2", and the replica retried ENOTFOUND for ever; so did other characters no host has.
      { servers: "127.0.0.1,127.0.0.2", stream: "S", model: counter },
      { servers: "nats://n1,n2:4222", stream: "S", model: counter },
      { servers: ["nats://n1;n2:4222"], stream: "S", model: counter },
      { servers: "nats://n1!:4222", stream: "S", model: counter },
      { servers: [server.url, server.wsUrl], stream: "S", model: counter },
      // A fresh-eyes trial: connectOptions.servers was ignored in silence (the replica opened
      // on `servers`), and so was every connect option beside a given connection.
      {
        servers: server.url,
        connectOptions: { servers: "nats://127.0.0.1:1" },
        stream: "S",
        model: counter,
      },
      { connection: nc, connectOptions: { user: "u" }, stream: "S", model: counter },
    ];
    for (const options of cases) {
      const err = await rejection(openSynchronizer(options as any));
      expect(isStateSyncError(err, "VALIDATION"), String(err)).toBe(true);
    }
    // A new user's trial: several servers in one string with commas (as the CLI takes them).
    const commas = `${server.url},nats://127.0.0.1:1`;
    const listed = await rejection(
      openSynchronizer({ servers: commas, stream: "S", model: counter }),
    );
    expect(listed.message).toMatch(/in an array, not one string with commas/);
    const hosts = await rejection(
      openSynchronizer({ servers: "127.0.0.1,127.0.0.2", stream: "S", model: counter }),
    );
    expect(hosts.message).toMatch(/in an array, not one string with commas/);
    // Each mistake gets its own hint, and the value given (a trial: `http://…` read "not one
    // string with commas").
    const http = await rejection(
      openSynchronizer({ servers: "http://127.0.0.1:4222", stream: "S", model: counter }),
    );
    expect(http.message).toMatch(/not "http:\/\/127\.0\.0\.1:4222"$/m);
    expect(http.message).not.toMatch(/commas|ws:\/\//);
    const ws = await rejection(
      openSynchronizer({ servers: "ws://127.0.0.1:8080", stream: "S", model: counter }),
    );
    expect(ws.message).toMatch(/for ws:\/\/ use @statesync\/browser's openSynchronizer/);
    // A bare host:port is accepted (this one then starts offline: nothing listens there).
    const bare = await openSynchronizer({
      servers: `127.0.0.1:${await getFreePort()}`,
      stream: uniqueStream(),
      model: counter,
      snapshots: false,
      waitFor: "restored",
    });
    // An update that times out unsent there names why (a new user's quick start with no server
    // read only "waited 30001 ms without being sent"; the refusal went to onError alone).
    const unsent = await bare
      .update("add", { by: 1 }, { outcomeTimeoutMs: 1_500 })
      .catch((e: StateSyncError) => e);
    expect(unsent).toMatchObject({ code: "UNAVAILABLE", details: { notSent: true } });
    expect((unsent as Error).message).toMatch(/the replica is (offline|connecting): .*connect/);
    expect((unsent as Error).cause).toBeDefined();
    await bare.close();
    await nc.close();
  });

  // A fresh-eyes trial: with another stream holding the subjects, the replica read `offline`
  // for good and its updates failed UNAVAILABLE much later, no error naming the cause.
  it("rejects STREAM_CONFIG at once when another stream holds the subjects it would create", async () => {
    const nc = await tcp(server.url);
    const holder = uniqueStream("HOLDER");
    await (await nc.jetstreamManager()).streams.add({ name: holder, subjects: [`${holder}.log`] });
    const err = await rejection(
      openSynchronizer({
        servers: server.url,
        stream: uniqueStream(),
        subjectPrefix: holder,
        model: counter,
        snapshots: false,
      }),
    );
    expect(isStateSyncError(err, "STREAM_CONFIG"), String(err)).toBe(true);
    expect(String(err)).toMatch(/another stream already holds/);
    await nc.close();
  });

  // A fresh-eyes trial: an empty snapshotKey given to openSynchronizer was refused as "invalid
  // createSynchronizer options", a function the caller never called.
  it("names the option, not an inner function, when the engine refuses one", async () => {
    const err = await rejection(
      openSynchronizer({
        servers: server.url,
        stream: uniqueStream(),
        model: counter,
        snapshots: false,
        snapshotKey: "",
      }),
    );
    expect(isStateSyncError(err, "VALIDATION"), String(err)).toBe(true);
    expect(String(err)).toMatch(/snapshotKey/);
    expect(String(err)).not.toMatch(/createSynchronizer/);
  });

  it("refuses a snapshotDir that is a file, before connecting (VALIDATION)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "statesync-notdir-"));
    const file = join(dir, "file");
    await writeFile(file, "x");
    const err = await rejection(
      openSynchronizer({
        servers: server.url,
        stream: uniqueStream(),
        model: counter,
        snapshotDir: file,
      }),
    );
    expect(isStateSyncError(err, "VALIDATION"), String(err)).toBe(true);
    expect(String(err)).toMatch(/not a directory/);
    await rm(dir, { recursive: true, force: true });
  });
});

/**
 * A new user's trial: `key` given for a stream a state owns, or left out for a shared stream,
 * was refused as "stream S is unsafe for statesync: subjects [...] do not capture S.a" (or "are
 * not exactly"), as if the stream's configuration were wrong. Outcome: the refusal says which
 * layout the stream has and whether to open it with or without `key`.
 */
describe("a replica whose key does not fit the stream's layout", () => {
  it("is told to open a state's own stream without key, and to give a shared stream's key", async () => {
    const own = uniqueStream("OWNED");
    const shared = uniqueStream("SHARED");
    const where = { servers: server.url, model: counter, snapshots: false as const };
    await (await openSynchronizer({ ...where, stream: own })).close();
    await (await openSynchronizer({ ...where, stream: shared, key: "t1.b1" })).close();
    const withKey = (await rejection(
      openSynchronizer({ ...where, stream: own, key: "a" }),
    )) as StateSyncError;
    expect(withKey.code).toBe("STREAM_CONFIG");
    expect(withKey.message).toContain("open it without `key`");
    const withoutKey = (await rejection(
      openSynchronizer({ ...where, stream: shared }),
    )) as StateSyncError;
    expect(withoutKey.code).toBe("STREAM_CONFIG");
    expect(withoutKey.message).toContain("give the state's key");
  });
});
