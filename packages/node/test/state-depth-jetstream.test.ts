import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  defineModel,
  MAX_STATE_DEPTH,
  openSynchronizer,
  startNatsServer,
  stateHash,
  type NatsServer,
  type StateSyncError,
} from "@statesync/node";
import { appendOlderCommand, codeOf, tcp, uniqueStream, until } from "./helpers.js";

/** Nested arrays `levels` deep, built without recursion: `{ tree: nested(L) }` nests L + 1. */
function nested(levels: number): unknown[] {
  let v: unknown[] = [];
  for (let i = 1; i < levels; i++) v = [v];
  return v;
}

const tree = defineModel({
  name: "tree",
  state: z.object({ tree: z.any(), blob: z.string(), n: z.number().int() }),
  initial: { tree: [], blob: "", n: 0 },
  commands: {
    setDepth: {
      args: z.object({ levels: z.number().int().positive() }),
      apply(d, { levels }) {
        d.tree = nested(levels);
      },
    },
    fill: {
      args: z.object({ bytes: z.number().int().nonnegative() }),
      apply(d, { bytes }) {
        d.blob = "x".repeat(bytes);
      },
    },
    bump: {
      args: z.object({}),
      apply(d) {
        d.n += 1;
      },
    },
  },
});

/** The stream's first sequence and the subjects' message count (what a truncation changes). */
async function streamState(url: string, stream: string) {
  const nc = await tcp(url);
  try {
    const info = await (await nc.jetstreamManager()).streams.info(stream);
    return { first: info.state.first_seq, messages: info.state.messages };
  } finally {
    await nc.close();
  }
}

/**
 * A fresh-eyes trial on nats-server: a state nested deeper than an entry may hold (300 levels)
 * and larger than `max_payload` was compacted, automatically and by `compact()`, into a chunked
 * snapshot every reader refused, and the history before it truncated: new replicas failed
 * TRUNCATED. Now nothing is written and the history is kept.
 */
describe("a state nested deeper than MAX_STATE_DEPTH on nats-server", () => {
  let server: NatsServer; // max_payload 64 KiB: a 100 KB state is chunked
  let dir: string;
  beforeAll(async () => {
    server = await startNatsServer({ extraConfig: "max_payload: 65536" });
    dir = await mkdtemp(path.join(tmpdir(), "statesync-depth-"));
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const open = (stream: string, extra: Record<string, unknown> = {}) => {
    const errors: StateSyncError[] = [];
    return openSynchronizer({
      servers: server.url,
      stream,
      model: tree,
      snapshots: false,
      compaction: false,
      onError: (e) => errors.push(e),
      ...extra,
    }).then((s) => Object.assign(s, { errors }));
  };

  it("compact() and automatic compaction refuse it, typed, writing nothing: late replicas open", async () => {
    const stream = uniqueStream("DEEP");
    const a = await open(stream, { compaction: { everyEntries: 5, jitter: 0 } });
    await a.updateUnconditionally("fill", { bytes: 100_000 });
    await a.waitFor(await appendOlderCommand(server.url, stream, "setDepth", { levels: 300 }));
    const before = await streamState(server.url, stream);
    const refused = await a.compact().catch((e: StateSyncError) => e);
    expect((refused as StateSyncError).code).toBe("VALIDATION");
    expect((refused as StateSyncError).message).toContain(`deeper than ${MAX_STATE_DEPTH} levels`);
    // Conditional: this SDK's unconditional commands are no-ops on a state this deep.
    for (let i = 0; i < 6; i++) await a.update("bump", {});
    await until(() => (a.errors.length > 0 || a.stats.compactions > 0 ? true : undefined));
    expect(a.errors.map((e) => e.code)).toEqual(["VALIDATION"]);
    expect(a.stats.compactions).toBe(0);
    const after = await streamState(server.url, stream);
    expect(after.first).toBe(before.first);
    expect(after.messages).toBe(before.messages + 6); // the bumps, and no part
    const late = await open(stream);
    expect(late.revision).toBe(a.revision);
    expect(stateHash(late.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), late.close()]);
  });

  it("a state of MAX_STATE_DEPTH levels is compacted in chunks, and late replicas load it", async () => {
    const stream = uniqueStream("EDGE");
    const a = await open(stream);
    await a.updateUnconditionally("setDepth", { levels: MAX_STATE_DEPTH - 1 });
    await a.updateUnconditionally("fill", { bytes: 100_000 });
    const { revision } = await a.compact();
    expect((await streamState(server.url, stream)).first).toBeGreaterThan(1);
    const late = await open(stream);
    expect(late.revision).toBe(revision);
    expect(stateHash(late.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), late.close()]);
  });

  it("a snapshot file tampered to 200,000 levels (checksum recomputed) is CORRUPT_SNAPSHOT at load; saves go on", async () => {
    // Fresh-eyes trial: it was used, and every later save failed with a raw RangeError.
    const stream = uniqueStream("TAMPER");
    const snapshotDir = path.join(dir, stream);
    const a = await open(stream, { snapshots: undefined, snapshotDir });
    await a.update("bump", {});
    await a.close(); // saves
    const [name] = await readdir(snapshotDir);
    const file = path.join(snapshotDir, name!);
    const doc = JSON.parse(await readFile(file, "utf8")) as { body: string; sha256: string };
    const record = JSON.parse(doc.body) as { state: { tree: unknown } };
    record.state.tree = "DEEP";
    const depth = 200_000;
    doc.body = JSON.stringify(record).replace('"DEEP"', "[".repeat(depth) + "]".repeat(depth));
    doc.sha256 = createHash("sha256").update(doc.body, "utf8").digest("hex");
    await writeFile(file, JSON.stringify(doc));

    const b = await open(stream, { snapshots: undefined, snapshotDir });
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(b.errors[0]!.message).toContain(`deeper than ${MAX_STATE_DEPTH} levels`);
    expect(b.stats.snapshotsRestored).toBe(0);
    expect(b.state).toEqual({ tree: [], blob: "", n: 1 });
    await b.saveSnapshot();
    await b.close();
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    const c = await open(stream, { snapshots: undefined, snapshotDir });
    expect(c.stats.snapshotsRestored).toBe(1);
    expect(c.errors).toEqual([]);
    expect(await codeOf(c.close())).toBeUndefined();
  });
});
