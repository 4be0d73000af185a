import { mkdtemp, readdir, readFile, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createSynchronizer,
  defineModel,
  isStateSyncError,
  MemoryLog,
  type SnapshotRecord,
  type StateSyncError,
} from "@statesync/core";
import { z } from "zod";
import { runSnapshotStoreConformance } from "@statesync/core/testing";
import { FileSnapshotStore, snapshotFileName } from "@statesync/node";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { rejection } from "./helpers.js";

async function tempDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), "statesync-snapshots-"));
}

async function flipBit(path: string, at: number): Promise<void> {
  const buf = await readFile(path);
  const i = Math.min(buf.length - 1, Math.max(0, at));
  buf[i] = (buf[i] as number) ^ 0x04;
  await writeFile(path, buf);
}

let flips = 0;
runSnapshotStoreConformance("FileSnapshotStore", async () => {
  const dir = await tempDir();
  const store = new FileSnapshotStore(join(dir, "nested", "snapshots"));
  return {
    store,
    corrupt: async (key) => {
      const path = store.pathOf(key);
      flips += 1;
      if (flips % 2 === 0) await truncate(path, Math.floor((await readFile(path)).length / 2));
      else await flipBit(path, Math.floor((await readFile(path)).length * 0.6));
    },
    teardown: () => rm(dir, { recursive: true, force: true }),
  };
});

const record = (revision: number, state: unknown = { n: revision }): SnapshotRecord => ({
  format: 1,
  revision,
  state,
  logIdentity: "jetstream:S:S.log@2024-01-01T00:00:00Z",
  messageId: `m${revision}`,
  model: "m",
  modelVersion: 1,
  savedAt: 1,
});

describe("FileSnapshotStore damage", () => {
  let dir: string;
  let store: FileSnapshotStore;
  beforeEach(async () => {
    dir = await tempDir();
    store = new FileSnapshotStore(dir);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const expectCorrupt = async () => {
    const err = await rejection(store.load("k"));
    expect(isStateSyncError(err, "CORRUPT_SNAPSHOT"), String(err)).toBe(true);
  };

  it("rejects a bit flip anywhere in the file", async () => {
    await store.save("k", record(3, { text: "x".repeat(200), list: [1, 2, 3] }));
    const size = (await readFile(store.pathOf("k"))).length;
    for (const at of [0, 10, 40, 90, Math.floor(size / 2), size - 10, size - 1]) {
      await rm(store.pathOf("k"), { force: true });
      await store.save("k", record(3, { text: "x".repeat(200), list: [1, 2, 3] }));
      await flipBit(store.pathOf("k"), at);
      await expectCorrupt();
    }
  });

  it("rejects a truncated file, an empty file and another program's JSON", async () => {
    await store.save("k", record(5));
    const size = (await readFile(store.pathOf("k"))).length;
    for (const length of [size - 1, Math.floor(size / 2), 1, 0]) {
      await rm(store.pathOf("k"));
      await store.save("k", record(5));
      await truncate(store.pathOf("k"), length);
      await expectCorrupt();
    }
    await writeFile(store.pathOf("k"), JSON.stringify({ revision: 5, state: {} }));
    await expectCorrupt();
  });

  it("rejects a record of the wrong shape even with a valid checksum", async () => {
    const body = JSON.stringify({ ...record(2), format: 2 });
    const { createHash } = await import("node:crypto");
    const sha256 = createHash("sha256").update(body).digest("hex");
    await writeFile(
      store.pathOf("k"),
      JSON.stringify({ kind: "statesync-snapshot", v: 1, key: "k", sha256, body }),
    );
    await expectCorrupt();
  });

  it("replaces a damaged file on the next save", async () => {
    await store.save("k", record(9));
    await truncate(store.pathOf("k"), 10);
    await store.save("k", record(2));
    expect((await store.load("k"))?.revision).toBe(2);
  });

  it("keeps a directory in the snapshot file's place: the save says to remove it (stop 21 trial)", async () => {
    const { mkdir } = await import("node:fs/promises");
    await mkdir(store.pathOf("k"));
    await writeFile(join(store.pathOf("k"), "keep.txt"), "mine");
    await expectCorrupt();
    const err = await rejection(store.save("k", record(4)));
    expect(String(err)).toMatch(/is a directory, so nothing can be saved there: remove it/);
    expect(await readFile(join(store.pathOf("k"), "keep.txt"), "utf8")).toBe("mine");
    await rm(store.pathOf("k"), { recursive: true });
    await store.save("k", record(4));
    expect((await store.load("k"))?.revision).toBe(4);
  });

  // A new user's trial: the replica's event read "discarding the local snapshot: … the file is a
  // directory", while the directory stayed (as documented: never removed for you).
  it("a directory in the snapshot file's place: the replica says it ignores it and leaves it, delete() refuses", async () => {
    const { mkdir } = await import("node:fs/promises");
    await mkdir(store.pathOf("k"));
    await writeFile(join(store.pathOf("k"), "keep.txt"), "mine");
    const err = await rejection(store.delete("k"));
    expect(isStateSyncError(err, "SNAPSHOT_FAILED"), String(err)).toBe(true);
    expect(String(err)).toMatch(
      /snapshot k: the file is a directory, which is never removed for you: remove it or move it away/,
    );
    const errors: StateSyncError[] = [];
    const model = defineModel({
      name: "m",
      state: z.object({ n: z.number() }),
      initial: { n: 0 },
      commands: {},
    });
    const sync = await createSynchronizer({
      log: new MemoryLog(),
      model,
      snapshots: store,
      snapshotKey: "k",
      onError: (e) => errors.push(e),
    });
    expect(errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(errors[0]!.message).toMatch(
      /^ignoring the local snapshot: snapshot k: the file is a directory, not a regular file; it is left in place: deleting it failed \(snapshot k: the file is a directory, which is never removed/,
    );
    expect(errors[0]!.details).toMatchObject({ deleted: false, kept: true });
    expect(await readFile(join(store.pathOf("k"), "keep.txt"), "utf8")).toBe("mine");
    await sync.close();
  });

  it("writes atomically: no temporary file is left, one file per key", async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.save(`key/${i % 3}`, record(i))));
    const files = await readdir(dir);
    expect(files.filter((f) => f.endsWith(".tmp"))).toEqual([]);
    expect(files).toHaveLength(3);
    expect((await store.load("key/0"))?.revision).toBe(18);
  });

  it("removes temporary files of dead processes on its first save, and only those", async () => {
    // A process that has exited: its pid no longer runs (reuse within this test is negligible).
    const { spawnSync } = await import("node:child_process");
    const dead = spawnSync(process.execPath, ["-e", ""]).pid!;
    const name = snapshotFileName("k");
    const files = {
      dead: `${name}.${dead}.0badf00d.tmp`,
      live: `${name}.${process.pid}.0badf00d.tmp`, // may be mid-write: kept
      other: `${name}.notes.tmp`, // not the store's naming: kept
    };
    for (const f of Object.values(files)) await writeFile(join(dir, f), "{");
    await store.save("k", record(1));
    const left = await readdir(dir);
    expect(left).not.toContain(files.dead);
    expect(left).toContain(files.live);
    expect(left).toContain(files.other);
    expect((await store.load("k"))?.revision).toBe(1);
  });

  it("derives distinct, safe file names (case, separators, long keys)", () => {
    const names = ["a", "A", "a/b", "a.b", "a_b", "../x", "x".repeat(500), "ü"].map(
      snapshotFileName,
    );
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) {
      expect(n).toMatch(/^[A-Za-z0-9_-]*-[0-9a-f]{16}\.snapshot\.json$/);
      expect(n.length).toBeLessThan(100);
    }
  });
});
