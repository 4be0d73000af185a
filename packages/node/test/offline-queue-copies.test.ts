import { cp, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createHash } from "node:crypto";
import {
  createSynchronizer,
  defineModel,
  encodeEntry,
  FilePendingStore,
  MemoryLog,
  openSynchronizer,
  pendingQueue,
  pendingQueueFolder,
} from "@statesync/node";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { uniqueStream, useNatsServer } from "./helpers.js";

/**
 * Copies of one pending-queue folder (`cp -r`, a cloned volume, an image built after a local
 * run) run as two live queues: neither may lose an update as a "re-send" of the other's (each
 * session queues under an origin of its own, docs/offline.md "Identity"). And a folder written
 * before records carried their origin still loads, its records recognised as committed.
 */
const ctx = useNatsServer();

const board = defineModel({
  name: "board",
  state: z.object({ cards: z.array(z.string()), n: z.number().int() }),
  initial: { cards: [], n: 0 },
  commands: {
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
    bump: { args: z.object({}), apply: (d) => void (d.n += 1) },
  },
});

const temps: string[] = [];
afterAll(() => Promise.all(temps.map((d) => rm(d, { recursive: true, force: true }))));
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "statesync-copies-"));
  temps.push(dir);
  return dir;
}

/** A replica of `board` on `log` whose queue is in the folder `dir` (owner "worker"). */
function openOn(log: MemoryLog, dir: string) {
  return createSynchronizer({
    log,
    model: board,
    pending: pendingQueue({ store: new FilePendingStore(dir), owner: "worker" }),
    compaction: false,
  });
}

/** Each of `syncs` queues `count` updates of both kinds, interleaved; all settle. */
async function queueFromEach(syncs: ReadonlyArray<{ update: any; updateUnconditionally: any }>) {
  const all: Promise<unknown>[] = [];
  for (let i = 0; i < 5; i++) {
    syncs.forEach((s, k) => {
      all.push(s.update("add", { card: `${k}-${i}` }));
      all.push(s.updateUnconditionally("bump", {}));
    });
  }
  await Promise.all(all);
}

const expected = (copies: number) =>
  Array.from({ length: copies }, (_, k) => Array.from({ length: 5 }, (_, i) => `${k}-${i}`))
    .flat()
    .sort();

describe("copies of one pending-queue folder (MemoryLog)", () => {
  it("two live copies of one folder each queue updates: every update of both applied once", async () => {
    const log = new MemoryLog();
    const dir = await tempDir();
    const first = path.join(dir, "a");
    // A local run creates the folder (its stored origin) and commits through it, then stops.
    const before = await openOn(log, first);
    await before.update("add", { card: "before" });
    await before.close();
    const second = path.join(dir, "b");
    await cp(first, second, { recursive: true });
    const [a, b] = await Promise.all([openOn(log.handle(), first), openOn(log.handle(), second)]);
    await queueFromEach([a, b]);
    const reader = await createSynchronizer({ log: log.handle(), model: board });
    expect([...reader.state.cards].sort()).toEqual(["before", ...expected(2)].sort());
    expect(reader.state.n).toBe(10);
    for (const s of [a, b]) {
      await s.waitFor(reader.revision);
      expect(s.state).toEqual(reader.state);
      expect(s.pendingCount).toBe(0);
    }
    await Promise.all([a.close(), b.close(), reader.close()]);
  });

  it("a copy made while updates were pending: those commit once, the copies' new ones each once", async () => {
    const log = new MemoryLog();
    const dir = await tempDir();
    const first = path.join(dir, "a");
    log.setOffline(true);
    const before = await openOn(log, first);
    const queued = [before.update("add", { card: "p1" }), before.updateUnconditionally("bump", {})];
    queued.forEach((p) => p.catch(() => undefined));
    await Promise.all(queued.map((p) => p.queued));
    await before.close(); // stays queued on disk
    const second = path.join(dir, "b");
    await cp(first, second, { recursive: true });
    log.setOffline(false);
    const [a, b] = await Promise.all([openOn(log.handle(), first), openOn(log.handle(), second)]);
    await queueFromEach([a, b]);
    await Promise.all([a.flush(), b.flush()]);
    const reader = await createSynchronizer({ log: log.handle(), model: board });
    expect([...reader.state.cards].sort()).toEqual(["p1", ...expected(2)].sort());
    expect(reader.state.n).toBe(11); // the copied bump once, and 5 of each copy
    await Promise.all([a.close(), b.close(), reader.close()]);
  });
});

describe("a queue folder written before records carried their origin", () => {
  it("loads; a record whose entry was committed before a crash is dropped, the other pushed", async () => {
    const log = new MemoryLog();
    const dir = await tempDir();
    const folder = path.join(dir, pendingQueueFolder("board", "worker"));
    await mkdir(folder, { recursive: true });
    const origin = "old-format-origin";
    const meta = { kind: "statesync-pending-queue", v: 1, key: "board", owner: "worker" };
    await writeFile(
      path.join(folder, "queue.json"),
      JSON.stringify({ ...meta, origin, highSeq: 0 }),
    );
    const record = (seq: number, card: string) => {
      const body = JSON.stringify({
        format: 1,
        seq,
        kind: "update",
        name: "add",
        args: { card },
        queuedAt: Date.now(),
        mv: board.version,
      });
      const sha256 = createHash("sha256").update(body, "utf8").digest("hex");
      const file = path.join(folder, `${String(seq).padStart(12, "0")}.pending.json`);
      return writeFile(file, JSON.stringify({ sha256, body }));
    };
    const genesis = await createSynchronizer({ log: log.handle(), model: board });
    await genesis.close();
    await record(7, "sent");
    await record(8, "not sent");
    // The old process appended seq 7 (format 2, its origin), then was killed before removal.
    log.injectRaw(
      encodeEntry({
        v: 2,
        kind: "command",
        ts: Date.now(),
        client: "old",
        seed: 1,
        name: "add",
        args: { card: "sent" },
        origin: [origin, 7],
      }),
    );
    const sync = await openOn(log.handle(), dir);
    expect(sync.pending.map((u) => u.id)).toEqual([8]); // 7 is in the table: not shown twice
    await sync.flush();
    expect(sync.state.cards).toEqual(["sent", "not sent"]);
    const reader = await createSynchronizer({ log: log.handle(), model: board });
    expect(reader.state.cards).toEqual(["sent", "not sent"]);
    expect((await readdir(folder)).filter((f) => f.endsWith(".pending.json"))).toEqual([]);
    await Promise.all([sync.close(), reader.close()]);
  });
});

describe("copies of one snapshot directory on nats-server", () => {
  it("two processes' copies of one directory each queue updates: every update applied once", async () => {
    const stream = uniqueStream("QCOPY");
    const first = path.join(ctx.dir, stream, "a");
    const open = (snapshotDir: string) =>
      openSynchronizer({
        servers: ctx.server.url,
        stream,
        model: board,
        snapshotDir,
        pending: { owner: "worker" },
      });
    const before = await open(first);
    await before.update("add", { card: "before" });
    await before.close();
    const second = path.join(ctx.dir, stream, "b");
    await cp(first, second, { recursive: true });
    const [a, b] = await Promise.all([open(first), open(second)]);
    await queueFromEach([a, b]);
    const reader = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: board,
      snapshots: false,
    });
    await reader.waitFor(Math.max(a.revision, b.revision));
    expect([...reader.state.cards].sort()).toEqual(["before", ...expected(2)].sort());
    expect(reader.state.n).toBe(10);
    await Promise.all([a.close(), b.close(), reader.close()]);
  });
});
