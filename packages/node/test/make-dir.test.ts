import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FilePendingStore, FileSnapshotStore } from "@statesync/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeDir } from "../src/make-dir.js";
import { rejection } from "./helpers.js";

// procfs answers ENOENT to a mkdir under a directory that exists: Node's `mkdir(dir, {
// recursive: true })` then loops for good in a libuv thread (make-dir.ts). A trial gave a
// snapshot directory under /proc: each save never settled and kept one more thread at 100% CPU.
const UNDER_PROC = "/proc/self/statesync-snapshots";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "statesync-make-dir-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("makeDir (mkdir -p that always ends)", () => {
  it("creates missing parents, and accepts a directory that exists", async () => {
    const deep = join(dir, "a", "b", "c");
    await makeDir(deep);
    await makeDir(deep);
    expect((await stat(deep)).isDirectory()).toBe(true);
  });

  it("rejects a path through a file, or a file where the directory should be", async () => {
    await writeFile(join(dir, "file"), "x");
    expect((await rejection(makeDir(join(dir, "file", "sub")))).code).toBe("ENOTDIR");
    expect((await rejection(makeDir(join(dir, "file")))).code).toBe("EEXIST");
  });

  it("rejects ENOENT under /proc instead of never settling", async () => {
    expect((await rejection(makeDir(join(UNDER_PROC, "x")))).code).toBe("ENOENT");
  }, 10_000);
});

describe("the file stores given a directory under /proc", () => {
  it("FileSnapshotStore: each save rejects with the ENOENT", async () => {
    const store = new FileSnapshotStore(UNDER_PROC);
    const record = {
      format: 1,
      revision: 1,
      state: {},
      logIdentity: "l",
      model: "m",
      modelVersion: 1,
      savedAt: 1,
    } as const;
    for (let i = 0; i < 2; i++) {
      const err = await rejection(store.save("k", record));
      expect(String(err.message)).toContain("ENOENT");
    }
  }, 10_000);

  it("FilePendingStore: open rejects QUEUE_FAILED", async () => {
    const err = await rejection(new FilePendingStore(UNDER_PROC).open("k", "owner-1"));
    expect(err.code).toBe("QUEUE_FAILED");
  }, 10_000);
});
