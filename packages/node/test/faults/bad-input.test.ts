import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type JetStreamManager, type NatsConnection } from "nats";
import {
  FileSnapshotStore,
  jetStreamSnapshotKey,
  startNatsServer,
  stateHash,
  type NatsServer,
  type StateSyncError,
} from "@statesync/node";
import { codeOf, uniqueStream } from "../helpers.js";
import { openLedger } from "../support/workload.js";

/**
 * Bad input that is not a raw log entry: command arguments that fail their schema, local
 * snapshots that are damaged or fail the state schema, keys that are not subject tokens, streams
 * whose configuration would drop history.
 */
let server: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let dir: string;
beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  jsm = await nc.jetstreamManager();
  dir = await mkdtemp(path.join(tmpdir(), "statesync-bad-"));
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

async function lastSeq(stream: string): Promise<number> {
  return (await jsm.streams.info(stream)).state.last_seq;
}

describe("command arguments that fail their schema", () => {
  it("fail with VALIDATION before anything is appended, conditional or not", async () => {
    const stream = uniqueStream("ARGS");
    const a = await openLedger({ servers: server.url, stream });
    const bad: Array<[string, unknown]> = [
      ["increment", { by: 1.5, opId: "x" }],
      ["increment", { by: 1 }],
      ["increment", { by: 1, opId: "" }],
      ["increment", { by: "1", opId: "x" }],
      ["increment", { by: Number.NaN, opId: "x" }],
      ["note", { text: "x".repeat(5_000) }],
      ["note", { text: undefined }],
      ["note", null],
      ["note", { text: new Date() as unknown as string }],
    ];
    for (const [name, args] of bad) {
      expect(await codeOf(a.update(name as "note", args as { text: string })), name).toBe(
        "VALIDATION",
      );
      expect(
        await codeOf(a.updateUnconditionally(name as "note", args as { text: string })),
        name,
      ).toBe("VALIDATION");
    }
    expect(await codeOf(a.update("nope" as "note", { text: "x" }))).toBe("UNKNOWN_COMMAND");
    expect(await codeOf(a.update((d) => void ((d as { count: unknown }).count = "many")))).toBe(
      "VALIDATION",
    );
    expect(await lastSeq(stream)).toBe(1);
    expect(a.revision).toBe(1);
    await a.update("note", { text: "fine" });
    expect(await lastSeq(stream)).toBe(2);
    await a.close();
  });
});

describe("damaged or invalid local snapshots", () => {
  /** Writes 3 increments with a disk snapshot, returns what a fresh replica needs. */
  async function withSnapshot(name: string) {
    const stream = uniqueStream(name);
    const snapshotDir = path.join(dir, stream);
    const a = await openLedger({ servers: server.url, stream, snapshotDir, snapshots: undefined });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1, opId: `o${i}` });
    const expected = { revision: a.revision, hash: stateHash(a.state) };
    await a.close();
    const store = new FileSnapshotStore(snapshotDir);
    const key = jetStreamSnapshotKey({ stream });
    expect(await store.load(key)).toMatchObject({ revision: expected.revision });
    return { stream, snapshotDir, store, key, file: store.pathOf(key), expected };
  }

  async function reopen(stream: string, snapshotDir: string) {
    const errors: StateSyncError[] = [];
    const b = await openLedger({
      servers: server.url,
      stream,
      snapshotDir,
      snapshots: undefined,
      onError: (e) => errors.push(e),
    });
    return { b, errors };
  }

  const damages: Array<[string, (file: string) => Promise<void>]> = [
    ["truncated to half", async (f) => writeFile(f, (await readFile(f)).subarray(0, 100))],
    ["truncated to zero bytes", async (f) => writeFile(f, "")],
    [
      "one bit flipped in the body",
      async (f) => {
        const b = await readFile(f);
        const i = b.indexOf("count") + 8;
        b[i] = b[i]! ^ 0x01;
        await writeFile(f, b);
      },
    ],
    [
      "one bit flipped in the checksum",
      async (f) => {
        const b = await readFile(f);
        const i = b.indexOf("sha256") + 12;
        b[i] = b[i]! ^ 0x01;
        await writeFile(f, b);
      },
    ],
    ["not JSON at all", async (f) => writeFile(f, Buffer.from([0xff, 0x00, 0x13, 0x37]))],
  ];
  for (const [name, damage] of damages) {
    it(`a snapshot file ${name}: reported CORRUPT_SNAPSHOT, discarded, rebuilt from the log`, async () => {
      const s = await withSnapshot("DMG");
      await damage(s.file);
      const { b, errors } = await reopen(s.stream, s.snapshotDir);
      expect(errors.map((e) => e.code)).toContain("CORRUPT_SNAPSHOT");
      expect(b.stats.snapshotsRestored).toBe(0);
      expect(b.revision).toBe(s.expected.revision);
      expect(stateHash(b.state)).toBe(s.expected.hash);
      await b.close();
      // ...and the next start restores the fresh snapshot written on close.
      const again = await reopen(s.stream, s.snapshotDir);
      expect(again.b.stats.snapshotsRestored).toBe(1);
      expect(again.errors).toEqual([]);
      await again.b.close();
    });
  }

  it("a well-formed snapshot whose state fails the schema: discarded, rebuilt from the log", async () => {
    const s = await withSnapshot("SCHEMA");
    const record = (await s.store.load(s.key))!;
    await s.store.delete(s.key);
    await s.store.save(s.key, { ...record, state: { count: "three", ops: [], notes: [] } });
    const { b, errors } = await reopen(s.stream, s.snapshotDir);
    expect(errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(errors[0]!.message).toContain("schema");
    expect(b.stats.snapshotsRestored).toBe(0);
    expect(stateHash(b.state)).toBe(s.expected.hash);
    await b.close();
  });

  it("a snapshot of another model in the same place: not used (kept for its app until this one saves over it)", async () => {
    const s = await withSnapshot("MODEL");
    const record = (await s.store.load(s.key))!;
    await s.store.delete(s.key);
    await s.store.save(s.key, { ...record, model: "other" });
    const { b, errors } = await reopen(s.stream, s.snapshotDir);
    expect(errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(stateHash(b.state)).toBe(s.expected.hash);
    await b.close();
  });
});

describe("keys and streams", () => {
  it("refuses keys that are not valid subject tokens (VALIDATION), before touching the server", async () => {
    const keys = [
      "",
      " ",
      "a b",
      "a..b",
      ".a",
      "a.",
      "a.*",
      "*",
      ">",
      "a.>",
      "a/b",
      "a\tb",
      "a\u0000b",
      "ünïcode",
      "$SYS",
      "a".repeat(300),
    ];
    for (const key of keys) {
      expect(
        await codeOf(openLedger({ servers: server.url, stream: "KEYS_BAD", key })),
        JSON.stringify(key),
      ).toBe("VALIDATION");
    }
    expect(await codeOf(jsm.streams.info("KEYS_BAD"))).toBeDefined(); // never created
    const ok = await openLedger({ servers: server.url, stream: "KEYS_BAD", key: "Tenant_1.a-b.c" });
    expect(ok.revision).toBe(1);
    await ok.close();
  });

  const limits: Array<Record<string, number | string>> = [
    { max_age: 3_600_000_000_000 },
    { max_msgs: 1000 },
    { max_bytes: 1 << 20 },
    { max_msgs_per_subject: 10 },
    { retention: "workqueue" },
    { retention: "interest" },
    { storage: "memory" },
  ];
  for (const layout of ["own", "shared"] as const) {
    for (const limit of limits) {
      it(`refuses an existing ${layout} stream with ${JSON.stringify(limit)} (STREAM_CONFIG)`, async () => {
        const stream = uniqueStream("LIMIT");
        const subjects = layout === "own" ? [`${stream}.log`] : [`${stream}.>`];
        await jsm.streams.add({ name: stream, subjects, ...limit } as never);
        const where = layout === "own" ? { stream } : { stream, key: "k" };
        expect(await codeOf(openLedger({ servers: server.url, ...where }))).toBe("STREAM_CONFIG");
        expect((await jsm.streams.info(stream)).state.messages).toBe(0);
        await jsm.streams.delete(stream);
      });
    }
  }

  it("a stream edited to drop history while replicas run: the next read of its configuration fails STREAM_CONFIG", async () => {
    const stream = uniqueStream("EDIT");
    const a = await openLedger({ servers: server.url, stream });
    await a.update("increment", { by: 1, opId: "before" });
    const info = await jsm.streams.info(stream);
    await jsm.streams.update(stream, { ...info.config, max_age: 3_600_000_000_000 });
    expect(await codeOf(a.fetchUpdates())).toBe("STREAM_CONFIG");
    expect(await codeOf(openLedger({ servers: server.url, stream }))).toBe("STREAM_CONFIG");
    await a.close();
  });
});
