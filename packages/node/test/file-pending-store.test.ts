import { fork, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  truncate,
  utimes,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runPendingStoreConformance } from "@statesync/core/testing";
import { FilePendingStore, pendingQueueFolder } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { rejection } from "./helpers.js";

/** The id of a process that has exited (so surely not running). */
function deadPid(): number {
  return spawnSync(process.execPath, ["-e", ""]).pid!;
}

/** Every lock under `dir` now names a process that died (as after `kill -9`). */
async function killHolders(dir: string): Promise<void> {
  const entries = await readdir(dir, { recursive: true });
  for (const name of entries.filter((n) => n.endsWith("/lock") || n === "lock")) {
    const path = join(dir, name);
    const lock = JSON.parse(await readFile(path, "utf8")) as Record<string, unknown>;
    await writeFile(path, JSON.stringify({ ...lock, pid: deadPid() }));
  }
}

runPendingStoreConformance("FilePendingStore", async () => {
  const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
  const store = new FilePendingStore(join(dir, "snapshots"));
  return {
    store,
    durable: true,
    reopen: async () => new FilePendingStore(store.dir),
    crash: async () => {
      await killHolders(store.dir);
      return new FilePendingStore(store.dir);
    },
    corrupt: async (key, owner, seq) => {
      const path = recordPath(store.dir, key, owner, seq);
      await truncate(path, Math.floor((await readFile(path)).length / 2));
    },
    // A directory (not empty) holds the name the damaged file would be moved to.
    corruptImmovable: async (key, owner, seq) => {
      const path = recordPath(store.dir, key, owner, seq);
      await truncate(path, Math.floor((await readFile(path)).length / 2));
      await mkdir(`${path}.damaged`);
      await writeFile(join(`${path}.damaged`, "in-the-way"), "");
      return () => rm(`${path}.damaged`, { recursive: true });
    },
    teardown: () => rm(dir, { recursive: true, force: true }),
  };
});

/** The file of record `seq` of `(key, owner)` in the store's directory `dir`. */
function recordPath(dir: string, key: string, owner: string, seq: number): string {
  return join(dir, pendingQueueFolder(key, owner), `${String(seq).padStart(12, "0")}.pending.json`);
}

const HOLDER = new URL("./support/queue-holder.mjs", import.meta.url);

describe("FilePendingStore", () => {
  it("two processes on one directory and owner: the second gets QUEUE_LOCKED until the first dies", async () => {
    const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
    const child = fork(HOLDER, [dir, "s", "worker"], {
      stdio: ["ignore", "ignore", "inherit", "ipc"],
    });
    await new Promise<void>((resolve, reject) => {
      child.once("message", () => resolve());
      child.once("exit", (code) => reject(new Error(`holder exited with ${code}`)));
    });
    const store = new FilePendingStore(dir);
    const error = await rejection(store.open("s", "worker"));
    expect(error).toMatchObject({ code: "QUEUE_LOCKED", details: { pid: child.pid } });
    // It says what to do (a new user read only "held by process N on vm").
    expect(error.message).toMatch(/give each process its own pending owner/);
    const other = await store.open("s", "worker-2"); // another owner: another queue
    await other.close();
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    const taken = await store.open("s", "worker"); // the dead holder's lock is taken over
    await taken.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("refuses a lock held by another live process with QUEUE_LOCKED, and takes it once that process is gone", async () => {
    const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
    const store = new FilePendingStore(dir);
    const q = await store.open("s", "worker");
    const lock = join(dir, pendingQueueFolder("s", "worker"), "lock");
    await q.close();
    // A lock written by a process that still runs (the parent of this one, say).
    const held = { pid: process.ppid, host: (await import("node:os")).hostname(), token: "x" };
    await writeFile(lock, JSON.stringify(held));
    const error = await rejection(store.open("s", "worker"));
    expect(error).toMatchObject({ code: "QUEUE_LOCKED", details: { pid: process.ppid } });
    await writeFile(lock, JSON.stringify({ ...held, pid: deadPid() }));
    const again = await store.open("s", "worker");
    await again.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("a lock held by a zombie (a process killed but not yet reaped by its parent) is taken over", async () => {
    // A fresh-eyes trial: `kill -9` of the holder under a parent that reaps slowly left it a
    // zombie, which `kill(pid, 0)` still finds, so the lock read QUEUE_LOCKED until the reaping.
    // `sh` starts a short `sleep` in the background and becomes a long `sleep`, which never
    // waits for it: the short one ends after the exec (so `sh` cannot have reaped it) a zombie.
    const parent = spawn("sh", ["-c", "sleep 0.3 & echo $!; exec sleep 30"], { stdio: "pipe" });
    try {
      const zombie = Number((await once(parent.stdout, "data"))[0].toString().trim());
      await expect
        .poll(() => readFileSync(`/proc/${zombie}/stat`, "utf8").split(") ")[1]?.[0], {
          timeout: 10_000,
        })
        .toBe("Z");
      const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
      const store = new FilePendingStore(dir);
      const q = await store.open("s", "worker");
      await q.close();
      const lock = join(dir, pendingQueueFolder("s", "worker"), "lock");
      const host = (await import("node:os")).hostname();
      await writeFile(lock, JSON.stringify({ pid: zombie, host, token: "x" }));
      const again = await store.open("s", "worker");
      await again.close();
      await rm(dir, { recursive: true, force: true });
    } finally {
      parent.kill("SIGKILL");
    }
  });

  it("a lock of a reused pid is taken over: this process's pid with a token it does not hold, or a running pid that started at another time", async () => {
    // A container restarted in place runs as the same pid (1) on the same host as the process
    // that died holding the lock (fresh-eyes trial: QUEUE_LOCKED forever).
    const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
    const store = new FilePendingStore(dir);
    const q = await store.open("s", "worker");
    const lock = join(dir, pendingQueueFolder("s", "worker"), "lock");
    const mine = JSON.parse(await readFile(lock, "utf8")) as Record<string, unknown>;
    // Held by this process: a second open in it is still refused.
    expect(await rejection(store.open("s", "worker"))).toMatchObject({ code: "QUEUE_LOCKED" });
    await q.close();
    await writeFile(lock, JSON.stringify({ ...mine, token: "left-by-the-dead-one" }));
    const again = await store.open("s", "worker");
    await again.close();
    // The parent runs, but as a process that started at another time than the lock says.
    const host = (await import("node:os")).hostname();
    const reused = { pid: process.ppid, host, token: "x", start: "1" };
    await writeFile(lock, JSON.stringify(reused));
    const third = await store.open("s", "worker");
    await third.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("a lock file that stays unreadable (its writer died before writing it) is taken over after 10 s", async () => {
    const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
    const store = new FilePendingStore(dir);
    const q = await store.open("s", "worker");
    await q.close();
    const lock = join(dir, pendingQueueFolder("s", "worker"), "lock");
    await writeFile(lock, "");
    const locked = await rejection(store.open("s", "worker"));
    expect(locked).toMatchObject({ code: "QUEUE_LOCKED" });
    // Not "held by process undefined on undefined" (a fresh-eyes trial).
    expect(locked.message).toMatch(/names no holder .*taken over/);
    const past = new Date(Date.now() - 60_000);
    await utimes(lock, past, past);
    const again = await store.open("s", "worker");
    await again.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("writes one file per pending update and removes only the ones deleted", async () => {
    const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
    const store = new FilePendingStore(dir);
    const q = await store.open("s", "worker");
    const folder = join(dir, pendingQueueFolder("s", "worker"));
    const record = (seq: number) =>
      ({ format: 1, seq, kind: "update", name: "add", args: { seq }, queuedAt: 1, mv: 1 }) as const;
    for (let seq = 1; seq <= 5; seq++) await q.put(record(seq));
    const files = async () => (await readdir(folder)).filter((n) => n.endsWith(".pending.json"));
    expect(await files()).toHaveLength(5);
    await q.delete([2, 3]);
    expect((await files()).sort()).toEqual([
      "000000000001.pending.json",
      "000000000004.pending.json",
      "000000000005.pending.json",
    ]);
    await q.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("removes records even when queue.json cannot be written (a full disk), and frees their space", async () => {
    const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
    const q = await new FilePendingStore(dir).open("s", "worker");
    const folder = join(dir, pendingQueueFolder("s", "worker"));
    const record = (seq: number) =>
      ({ format: 1, seq, kind: "update", name: "add", args: { seq }, queuedAt: 1, mv: 1 }) as const;
    for (let seq = 1; seq <= 4; seq++) await q.put(record(seq));
    // queue.json cannot be replaced now (a directory in its place: the rename fails, as a write
    // to a full disk does). Before, delete and clear failed there and removed nothing.
    await rm(join(folder, "queue.json"));
    await mkdir(join(folder, "queue.json"));
    await q.delete([1, 2]);
    await q.clear();
    const files = (await readdir(folder)).filter((n) => n.endsWith(".pending.json"));
    expect(files).toEqual([]);
    await q.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("a damaged queue.json says how to recover; without it the queue opens with its records", async () => {
    const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
    const store = new FilePendingStore(dir);
    const q = await store.open("s", "worker");
    const folder = join(dir, pendingQueueFolder("s", "worker"));
    const record = { format: 1, seq: 7, kind: "update", name: "add", args: {}, queuedAt: 1, mv: 1 };
    await q.put(record as never);
    await q.close();
    const meta = JSON.parse(await readFile(join(folder, "queue.json"), "utf8"));
    for (const text of ["", "{garbage", JSON.stringify({ ...meta, highSeq: 2 ** 53 - 3 })]) {
      await writeFile(join(folder, "queue.json"), text);
      const error = await rejection(new FilePendingStore(dir).open("s", "worker"));
      expect(error).toMatchObject({ code: "QUEUE_FAILED" });
      expect(error.message).toMatch(/remove queue\.json, or move it aside, and the queue opens/);
    }
    await rm(join(folder, "queue.json"));
    const again = await new FilePendingStore(dir).open("s", "worker");
    expect((await again.load()).records.map((r) => r.seq)).toEqual([7]);
    await again.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("opens a queue whose seqs are ahead of a clock set back by years, and goes on above them", async () => {
    // A trial: with the clock 2 years behind (a dead RTC battery before NTP), the open failed
    // QUEUE_FAILED "not a statesync queue" until queue.json was removed by hand.
    const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
    const q = await new FilePendingStore(dir).open("s", "worker");
    await q.close();
    const folder = join(dir, pendingQueueFolder("s", "worker"));
    const meta = JSON.parse(await readFile(join(folder, "queue.json"), "utf8"));
    const ahead = (Date.now() + 2 * 365 * 24 * 3600 * 1000) * 1024;
    await writeFile(join(folder, "queue.json"), JSON.stringify({ ...meta, highSeq: ahead }));
    const again = await new FilePendingStore(dir).open("s", "worker");
    const loaded = await again.load();
    expect(loaded.nextSeq).toBeGreaterThan(ahead);
    await again.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("never removes a file outside the queue's folder: a seq given as a path is VALIDATION", async () => {
    // Before, delete(["../../x"]) made the file name "../../x.pending.json" and removed that
    // file from the store's directory (the conformance suite refuses every non-seq; this is the
    // worst of them on disk).
    const dir = await mkdtemp(join(tmpdir(), "statesync-pending-"));
    const store = new FilePendingStore(dir);
    const q = await store.open("s", "worker");
    await writeFile(join(dir, "x.pending.json"), "{}");
    const bad = ["../../x"] as unknown as number[];
    expect(await rejection(q.delete(bad))).toMatchObject({ code: "VALIDATION" });
    expect(await readdir(dir)).toContain("x.pending.json");
    await q.close();
    await rm(dir, { recursive: true, force: true });
  });
});
