import {
  compareServerVersions,
  isStateSyncError,
  JetStreamLog,
  type NatsConnectionLike,
  type StreamInfoLike,
} from "@statesync/core";
import { startNatsServer, type NatsServer } from "@statesync/node";
import type { JetStreamManager, NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bytes, rejection, tcp, uniqueStream } from "./helpers.js";

let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await tcp(server.url);
  jsm = await nc.jetstreamManager();
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});

describe("JetStreamLog stream configuration", () => {
  it("creates a missing stream with a configuration that keeps all history", async () => {
    const stream = uniqueStream();
    const log = await JetStreamLog.open({ connection: nc, stream });
    const { config } = await jsm.streams.info(stream);
    expect(config.subjects).toEqual([`${stream}.log`]);
    expect(config.retention).toBe("limits");
    expect(config.storage).toBe("file");
    expect(config.max_age).toBe(0);
    expect(config.max_msgs).toBe(-1);
    expect(config.max_bytes).toBe(-1);
    expect(config.max_msgs_per_subject).toBe(-1);
    expect(config.discard).toBe("old");
    expect(config.duplicate_window).toBe(120_000_000_000);
    expect(config.deny_delete).toBe(true);
    expect(config.deny_purge).toBe(false);
    expect(config.allow_rollup_hdrs).toBe(false);
    expect(log.contiguous).toBe(true);
    expect(log.subject).toBe(`${stream}.log`);
    await log.close();
  });

  it("creates a shared stream capturing <prefix>.> and puts each key on its own subject", async () => {
    const stream = uniqueStream();
    const a = await JetStreamLog.open({ connection: nc, stream, key: "tenant-a.settings" });
    const b = await JetStreamLog.open({
      connection: nc,
      stream,
      key: "tenant-b",
      subjectPrefix: stream,
    });
    expect((await jsm.streams.info(stream)).config.subjects).toEqual([`${stream}.>`]);
    expect(a.subject).toBe(`${stream}.tenant-a.settings`);
    expect(a.contiguous).toBe(false);
    const ra = await a.appendConditional(bytes("a"), 0, "a1");
    const rb = await b.appendConditional(bytes("b"), 0, "b1");
    expect(rb.revision).toBe(ra.revision + 1);
    expect((await a.info()).latestRevision).toBe(ra.revision);
    expect((await b.info()).firstRevision).toBe(rb.revision);
    expect(await a.entryAt(rb.revision)).toBeUndefined();
    await a.close();
    await b.close();
  });

  it("refuses an existing stream with a limit that drops history (STREAM_CONFIG)", async () => {
    for (const limit of [
      { max_msgs: 1000 },
      { max_age: 3_600_000_000_000 },
      { max_bytes: 1 << 20 },
      { max_msgs_per_subject: 10 },
    ]) {
      const stream = uniqueStream();
      await jsm.streams.add({ name: stream, subjects: [`${stream}.log`], ...limit });
      const err = await rejection(JetStreamLog.open({ connection: nc, stream }));
      expect(isStateSyncError(err, "STREAM_CONFIG"), String(err)).toBe(true);
      expect(err.message).toContain(Object.keys(limit)[0]);
      // max_age is said in seconds as well as the wire's nanoseconds.
      if ("max_age" in limit) expect(err.message).toContain("max_age 3600000000000 ns (3600 s)");
      const lazy = new JetStreamLog({ connection: nc, stream });
      expect(isStateSyncError(await rejection(lazy.info()), "STREAM_CONFIG")).toBe(true);
      expect(
        isStateSyncError(
          await rejection(lazy.appendUnconditional(bytes("x"), "x")),
          "STREAM_CONFIG",
        ),
      ).toBe(true);
      await lazy.close();
    }
  });

  // Found by a fresh-eyes trial (stop 25, nats-server 2.10): a subject transform added to a
  // live state's stream stored every later entry under another subject, where no replica reads;
  // replicas, `statesync info` and new openings all took the stream as safe, and the log was
  // stuck for good (TRUNCATED).
  it("refuses a stream whose subject transform moves entries to another subject (2.10)", async () => {
    const stream = uniqueStream();
    const transform = { src: `${stream}.log`, dest: `${stream}.elsewhere` };
    const config = { name: stream, subjects: [`${stream}.log`], subject_transform: transform };
    if ((compareServerVersions(nc.info!.version, "2.10.0") ?? -1) < 0) {
      // 2.9 has no subject transforms: nats.js refuses to ask for one.
      await expect(jsm.streams.add(config as never)).rejects.toThrow(/requires server 2\.10/);
      return;
    }
    await jsm.streams.add(config as never);
    const si = await jsm.streams.info(stream);
    expect((si.config as { subject_transform?: unknown }).subject_transform).toEqual(transform);
    const err = await rejection(JetStreamLog.open({ connection: nc, stream }));
    expect(isStateSyncError(err, "STREAM_CONFIG"), String(err)).toBe(true);
    expect(err.message).toContain(
      `a subject transform stores messages under "${stream}.elsewhere"`,
    );
  });

  it("replicas: 3 on a server without a cluster: STREAM_CONFIG saying so, not UNAVAILABLE (retried in silence)", async () => {
    const stream = uniqueStream();
    const err = await rejection(JetStreamLog.open({ connection: nc, stream, replicas: 3 }));
    expect(isStateSyncError(err, "STREAM_CONFIG"), String(err)).toBe(true);
    expect(err.message).toMatch(/3 replicas: the server runs JetStream without a cluster/);
    expect(err.details).toMatchObject({ stream, replicas: 3 });
  });

  // A fresh-eyes trial: a new stream whose subjects another stream already held was refused by
  // the server (10065) and taken for a server that is down: the replica read `offline` for good,
  // with no error naming the cause, and the CLI said UNAVAILABLE.
  it("a new stream whose subjects another stream holds: STREAM_CONFIG saying so, not UNAVAILABLE", async () => {
    const holder = uniqueStream();
    await jsm.streams.add({ name: holder, subjects: [`${holder}.log`] });
    const stream = uniqueStream();
    const err = await rejection(
      JetStreamLog.open({ connection: nc, stream, subjectPrefix: holder }),
    );
    expect(isStateSyncError(err, "STREAM_CONFIG"), String(err)).toBe(true);
    expect(err.message).toMatch(/subjects overlap with an existing stream/);
    expect(err.message).toContain(`another stream already holds a subject of ${holder}.log`);
    expect(err.details).toMatchObject({ stream, errCode: 10065 });
    await expect(jsm.streams.info(stream)).rejects.toThrow(/stream not found/);
    await jsm.streams.delete(holder);
  });

  it("refuses subjects that do not match the layout, retention other than limits, memory storage", async () => {
    const cases: Array<{ cfg: Record<string, unknown>; key?: string }> = [
      { cfg: { subjects: ["elsewhere.>"] }, key: "k" },
      { cfg: { subjects: ["%s.log", "%s.other"] } },
      { cfg: { subjects: ["%s.>"] } },
      { cfg: { subjects: ["%s.log"], retention: "interest" } },
      { cfg: { subjects: ["%s.log"], storage: "memory" } },
    ];
    for (const { cfg, key } of cases) {
      const stream = uniqueStream();
      const subjects = (cfg.subjects as string[]).map((s) => s.replace("%s", stream));
      await jsm.streams.add({ name: stream, ...cfg, subjects } as any);
      const err = await rejection(JetStreamLog.open({ connection: nc, stream, key }));
      expect(isStateSyncError(err, "STREAM_CONFIG"), `${JSON.stringify(cfg)}: ${err}`).toBe(true);
      await jsm.streams.delete(stream);
    }
  });

  it("opens an existing safe stream; with create: false a missing one is STREAM_CONFIG", async () => {
    const stream = uniqueStream();
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    const log = await JetStreamLog.open({ connection: nc, stream, key: "x", create: false });
    await log.appendConditional(bytes("1"), 0, "1");
    await log.close();
    const missing = uniqueStream();
    const err = await rejection(
      JetStreamLog.open({ connection: nc, stream: missing, create: false }),
    );
    expect(isStateSyncError(err, "STREAM_CONFIG")).toBe(true);
    await expect(jsm.streams.info(missing)).rejects.toThrow();
  });

  it("derives maxEntryBytes from max_payload and the stream's max_msg_size", async () => {
    const stream = uniqueStream();
    await jsm.streams.add({ name: stream, subjects: [`${stream}.log`], max_msg_size: 4096 });
    const log = await JetStreamLog.open({ connection: nc, stream });
    const { maxEntryBytes } = await log.info();
    expect(maxEntryBytes).toBeLessThan(4096);
    expect(maxEntryBytes).toBeGreaterThan(2048);
    expect((await log.appendUnconditional(new Uint8Array(maxEntryBytes), "full")).revision).toBe(1);
    const err = await rejection(log.appendUnconditional(new Uint8Array(maxEntryBytes + 1), "over"));
    expect(isStateSyncError(err, "PAYLOAD_TOO_LARGE")).toBe(true);
    const big = new JetStreamLog({ connection: nc, stream: uniqueStream() });
    expect((await big.info()).maxEntryBytes).toBe(1024 * 1024 - 1024);
    await big.close();
    await log.close();
  });
});

describe("JetStreamLog validation", () => {
  it("rejects invalid keys, stream names and options with VALIDATION", () => {
    for (const key of ["", "a..b", ".a", "a.", "a b", "a*", "a.>", "é", "a/b", "x".repeat(300)]) {
      let error: unknown;
      try {
        new JetStreamLog({ connection: nc, stream: "S", key });
      } catch (e) {
        error = e;
      }
      expect(isStateSyncError(error, "VALIDATION"), `key ${JSON.stringify(key)}`).toBe(true);
    }
    for (const stream of ["", "a.b", "a b", "a*", "a>", "a/b", "x".repeat(256)]) {
      expect(() => new JetStreamLog({ connection: nc, stream })).toThrow(/stream name/);
    }
    expect(() => new JetStreamLog({ connection: nc, stream: "S", replicas: 0 })).toThrow();
    expect(() => new JetStreamLog({ connection: nc, stream: "S", subjectPrefix: "$JS" })).toThrow();
    expect(() => new JetStreamLog({ connection: null as any, stream: "S" })).toThrow();
    for (const domain of ["", "a.b", "a b", "a*", "a>"]) {
      expect(() => new JetStreamLog({ connection: nc, stream: "S", domain })).toThrow(/domain/);
    }
    for (const key of ["a", "a.b.c", "A-b_9.x"]) {
      expect(new JetStreamLog({ connection: nc, stream: "S", key }).subject).toBe(`S.${key}`);
    }
  });

  it("rejects a bad message id with VALIDATION", async () => {
    const log = new JetStreamLog({ connection: nc, stream: uniqueStream() });
    for (const id of ["", "a\nb", "x".repeat(600)]) {
      expect(
        isStateSyncError(await rejection(log.appendUnconditional(bytes("a"), id)), "VALIDATION"),
      ).toBe(true);
    }
    await log.close();
  });
});

describe("JetStreamLog info after a purge", () => {
  it("reports firstRevision 0 and keeps latestRevision when every entry is purged", async () => {
    const stream = uniqueStream();
    const log = await JetStreamLog.open({ connection: nc, stream });
    await jsm.streams.purge(stream);
    expect(await log.info()).toMatchObject({ firstRevision: 0, latestRevision: 0 });
    for (let i = 0; i < 3; i++) await log.appendConditional(bytes(`${i}`), i, `m${i}`);
    await jsm.streams.purge(stream);
    const info = await log.info();
    expect(info).toMatchObject({ firstRevision: 0, latestRevision: 3 });
    const collected: number[] = [];
    for await (const e of log.read(1, 3)) collected.push(e.revision);
    expect(collected).toEqual([]);
    const next = await log.appendConditional(bytes("3"), 3, "m3");
    expect(next.revision).toBe(4);
    expect(await log.info()).toMatchObject({ firstRevision: 4, latestRevision: 4 });
    await log.close();
  });

  it("shared layout: a fully purged subject reads as empty and accepts expected 0 again", async () => {
    const stream = uniqueStream();
    const log = await JetStreamLog.open({ connection: nc, stream, key: "k" });
    await log.appendConditional(bytes("a"), 0, "a");
    await log.appendConditional(bytes("b"), 1, "b");
    await log.truncateBefore(10);
    expect(await log.info()).toMatchObject({ firstRevision: 0, latestRevision: 0 });
    expect((await log.appendConditional(bytes("c"), 0, "c")).revision).toBe(3);
    await log.close();
  });
});

describe("JetStreamLog conflict details", () => {
  it("reports the log's latest revision in AppendConflictError", async () => {
    const log = await JetStreamLog.open({ connection: nc, stream: uniqueStream() });
    await log.appendConditional(bytes("a"), 0, "a");
    await log.appendConditional(bytes("b"), 1, "b");
    const err = await rejection(log.appendConditional(bytes("x"), 1, "x"));
    expect(isStateSyncError(err, "CONFLICT")).toBe(true);
    expect(err.latestRevision).toBe(2);
    await log.close();
  });
});

/** A connection that answers INFO only: enough for the server-version check. */
function fakeConnection(info: { version: string; cluster?: string }): NatsConnectionLike {
  const stream = (name: string): StreamInfoLike => ({
    config: { name, subjects: [`${name}.>`], retention: "limits", storage: "file" },
    created: "2024-01-01T00:00:00Z",
    state: { messages: 0, first_seq: 0, last_seq: 0 },
  });
  return {
    info: { ...info, max_payload: 1 << 20 },
    status: () => ({
      [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }),
    }),
    closed: () => new Promise(() => undefined),
    isClosed: () => false,
    jetstream: () => ({}) as any,
    jetstreamManager: async () =>
      ({ streams: { info: async (name: string) => stream(name) } }) as any,
  };
}

describe("UNSUPPORTED_SERVER", () => {
  it("refuses the shared layout on a clustered server older than 2.9.21", async () => {
    const refused = [
      { version: "2.9.10", cluster: "c" },
      { version: "2.9.20", cluster: "c" },
      { version: "2.9.21-beta.1", cluster: "c" },
      { version: "garbage", cluster: "c" },
    ];
    for (const info of refused) {
      const err = await rejection(
        JetStreamLog.open({ connection: fakeConnection(info), stream: "S", key: "k" }),
      );
      expect(isStateSyncError(err, "UNSUPPORTED_SERVER"), JSON.stringify(info)).toBe(true);
    }
    const accepted = [
      { version: "2.9.21", cluster: "c" },
      { version: "2.10.0", cluster: "c" },
      { version: "2.12.1", cluster: "c" },
      { version: "2.9.10" },
    ];
    for (const info of accepted) {
      const log = await JetStreamLog.open({
        connection: fakeConnection(info),
        stream: "S",
        key: "k",
      });
      await log.close();
    }
  });

  it("accepts the own-stream layout on an old clustered server", async () => {
    const connection = fakeConnection({ version: "2.9.10", cluster: "c" });
    (connection as any).jetstreamManager = async () => ({
      streams: {
        info: async () => ({
          config: { subjects: ["S.log"], retention: "limits" },
          created: "x",
          state: { messages: 0, first_seq: 0, last_seq: 0 },
        }),
      },
    });
    const log = await JetStreamLog.open({ connection, stream: "S" });
    await log.close();
  });

  it("compares versions as semver", () => {
    expect(compareServerVersions("2.10.0", "2.9.21")).toBeGreaterThan(0);
    expect(compareServerVersions("2.9.21", "2.9.21")).toBe(0);
    expect(compareServerVersions("2.9.3", "2.9.21")).toBeLessThan(0);
    expect(compareServerVersions("v2.11.0", "2.9.21")).toBeGreaterThan(0);
    expect(compareServerVersions("2.9.21-RC.1", "2.9.21")).toBeLessThan(0);
    expect(compareServerVersions("x", "2.9.21")).toBeUndefined();
  });
});
