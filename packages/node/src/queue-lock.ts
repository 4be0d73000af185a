import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { open, rename, stat, unlink } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { StateSyncError } from "@statesync/core";
import { isRunning } from "./atomic-file.js";
import { readRegularFile } from "./regular-file.js";

/**
 * The lock of a file pending queue (`FilePendingStore`): a file `lock` in the queue's folder,
 * created exclusively with `{ pid, host, token, since, start }`. A live holder's lock refuses a
 * second one (`QUEUE_LOCKED`); a dead holder's (on this host) is taken over.
 */

/** Name of the lock file in a queue's folder. */
export const LOCK = "lock";
/** How long a lock file may stay unreadable before its writer counts as dead, ms. */
export const UNREADABLE_LOCK_MS = 10_000;

/** A lock file as read: its holder, and whether that holder is gone. */
interface LockHolder {
  readonly text: string;
  readonly pid: unknown;
  readonly host: unknown;
  readonly dead: boolean;
}

/** Tokens of the locks this process holds (a lock naming this pid with another token is stale). */
const heldTokens = new Set<string>();

/**
 * When process `pid` started (Linux: field 22 of `/proc/<pid>/stat`, clock ticks since boot),
 * or undefined where that cannot be read. With the pid it names one process even when pids are
 * reused (a container restarted in place runs as pid 1 again).
 */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/**
 * Reads the lock at `path` (undefined when there is none). Its holder is dead when it is a
 * process of this host that no longer runs (its pid is not running, or runs a process that
 * started at another time: the pid was reused; or it is this process's pid and this process
 * does not hold the lock), or when the file stays unreadable (a process killed between
 * creating and writing it) for {@link UNREADABLE_LOCK_MS}. A lock that is not a regular file (a
 * FIFO: never read nor waited on) is `QUEUE_FAILED`: no statesync process made it.
 */
async function readLock(path: string): Promise<LockHolder | undefined> {
  let text: string;
  let age: number;
  try {
    text = (await readRegularFile(path, (kind) => notRegular(path, kind))).toString("utf8");
    age = Date.now() - (await stat(path)).mtimeMs;
  } catch (err) {
    if (err instanceof StateSyncError) throw err;
    return undefined;
  }
  let holder: { pid?: unknown; host?: unknown; token?: unknown; start?: unknown } | undefined;
  try {
    holder = JSON.parse(text) as typeof holder;
  } catch {
    holder = undefined;
  }
  if (holder === undefined || typeof holder !== "object" || holder === null) {
    return { text, pid: undefined, host: undefined, dead: age > UNREADABLE_LOCK_MS };
  }
  const pid = holder.pid;
  const dead =
    holder.host === hostname() &&
    typeof pid === "number" &&
    (pid === process.pid
      ? !(typeof holder.token === "string" && heldTokens.has(holder.token))
      : !isRunning(pid) || (typeof holder.start === "string" && startTimeOf(pid) !== holder.start));
  return { text, pid: holder.pid, host: holder.host, dead };
}

/** Creates the lock file exclusively; takes over one of a dead process on this host. */
export async function takeLock(folder: string, key: string, owner: string): Promise<string> {
  const token = randomBytes(8).toString("hex");
  // Known as held before the file exists, so another open in this process never takes it for a
  // stale lock of this pid.
  heldTokens.add(token);
  try {
    return await takeLockAs(token, folder, key, owner);
  } catch (e) {
    heldTokens.delete(token);
    throw e;
  }
}

async function takeLockAs(token: string, folder: string, key: string, owner: string) {
  const path = join(folder, LOCK);
  const start = startTimeOf(process.pid);
  const text = JSON.stringify({
    pid: process.pid,
    host: hostname(),
    token,
    since: Date.now(),
    start,
  });
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const handle = await open(path, "wx");
      try {
        await handle.writeFile(text, "utf8");
        await handle.sync();
      } finally {
        await handle.close();
      }
      return token;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST")
        throw failed(`cannot lock ${folder}`, err);
    }
    const holder = await readLock(path);
    if (holder === undefined) continue; // released meanwhile
    if (!holder.dead) {
      throw new StateSyncError(
        "QUEUE_LOCKED",
        holder.pid === undefined && holder.host === undefined
          ? `the queue of ${key} for ${owner} has a lock file that names no holder (${path}: being written, or damaged); one unchanged for ${UNREADABLE_LOCK_MS / 1000} s is taken over`
          : `the queue of ${key} for ${owner} is held by process ${String(holder.pid)} on ${String(holder.host)}: give each process its own pending owner (docs/offline.md, "The lock and the owner"), or close the other one`,
        { details: { key, owner, pid: holder.pid, host: holder.host } },
      );
    }
    // Taking over: move the dead holder's file aside (atomic, so of two processes doing this
    // at once one moves it), and check that what was moved is that file, not a lock another
    // process took meanwhile (then it goes back).
    const aside = `${path}.${token}.stale`;
    try {
      await rename(path, aside);
    } catch {
      continue; // gone: someone else took it over
    }
    const moved = await readLock(aside);
    if (moved !== undefined && moved.text !== holder.text) {
      await rename(aside, path).catch(() => undefined);
      continue;
    }
    await unlinkIfThere(aside);
  }
  throw new StateSyncError("QUEUE_LOCKED", `the queue of ${key} for ${owner} is contended`, {
    details: { key, owner },
  });
}

/** Forgets `token` as held by this process (its lock file was removed or given up). */
export function releaseToken(token: string): void {
  heldTokens.delete(token);
}

/** Removes `path`; a file already gone is fine. */
async function unlinkIfThere(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

function notRegular(path: string, kind: string): StateSyncError {
  return failed(`${path} is ${kind}, not a lock file`);
}

function failed(message: string, cause?: unknown): StateSyncError {
  return new StateSyncError("QUEUE_FAILED", message, { cause });
}
