import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";

/**
 * Writes `text` (UTF-8) to `path` so that a crash leaves either the old file or the new one,
 * never a torn one: a temporary file beside it (`<path>.<pid>.<random>.tmp`), fsync, rename over
 * `path`, then fsync of `folder` so the rename survives a power loss (best effort: not every
 * platform can sync a directory). The temporary file is removed when a step fails; the error is
 * rethrown (ENOSPC, EACCES, ...). Used by the snapshot and pending-update stores.
 */
export async function writeFileAtomically(
  folder: string,
  path: string,
  text: string,
): Promise<void> {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    const handle = await open(temp, "w");
    try {
      await handle.writeFile(text, "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, path);
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw inTheWay(err, path);
  }
  await syncDirectory(folder);
}

/**
 * The error of a rename over `path` that a directory stands in the way of (`EISDIR`, or
 * `ENOTEMPTY` / `EEXIST` for a directory with files), saying what to do; other errors as they
 * are. A directory is never removed for the caller: it may hold anything.
 */
function inTheWay(err: unknown, path: string): unknown {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  if (code !== "EISDIR" && code !== "ENOTEMPTY" && code !== "EEXIST") return err;
  return new Error(
    `${path} is a directory, so nothing can be saved there: remove it or move it away (${code})`,
    { cause: err },
  );
}

/** fsync of a directory, so a rename survives a power loss; not supported everywhere (Windows). */
export async function syncDirectory(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, "r");
    await handle.sync();
  } catch {
    // best effort
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * Whether a process with id `pid` runs on this machine (`kill(pid, 0)`; EPERM: it runs as
 * another user), and is not a zombie: a process killed but not yet reaped by its parent still
 * answers `kill(pid, 0)` (a parent that reaps slowly, `timeout -s KILL` loops in a container), so
 * on Linux its state in `/proc/<pid>/stat` is read too (`Z` zombie, `X` dead). Used to tell a
 * dead writer's leftovers (temporary files, locks).
 */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return true; // no /proc (macOS, Windows) or not readable: kill(pid, 0) said it runs
  }
  // The command name (field 2) may hold spaces and parentheses: the state follows the last ')'.
  const state = stat.charAt(stat.lastIndexOf(")") + 2);
  return state !== "Z" && state !== "X";
}
