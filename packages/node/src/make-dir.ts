import { mkdir, stat } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * `mkdir -p`: creates `dir` and the parents it lacks; resolves when it exists as a directory.
 * Rejects with the error of `mkdir` (ENOTDIR, EACCES, EPERM, ENOENT, ...), `EEXIST` when the path
 * is a file.
 *
 * Why not `mkdir(dir, { recursive: true })`: Node's (20, 22) walks back to the parent on ENOENT
 * and forward again when the parent exists, without end where a directory that exists cannot
 * hold new ones and says ENOENT (procfs: `/proc/self/x`). It spins in a libuv thread for good:
 * every save of a snapshot directory given under `/proc` took one more of the process's four
 * threads at 100% CPU, until file reads, DNS lookups (nats.js's connections to a host name) and
 * zlib of the whole process stopped (found by a trial; the same loop hung a CI job for 5 h in
 * another project, and Bun's own `mkdir -p` had it: oven-sh/bun#36162). Here each level is tried
 * at most twice, the second time after its parent exists, so an ENOENT then is final.
 */
export async function makeDir(dir: string): Promise<void> {
  try {
    await mkdir(dir);
    return;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return existingDirectory(dir, err);
    const parent = dirname(dir);
    if (code !== "ENOENT" || parent === dir) throw err;
    await makeDir(parent);
  }
  try {
    await mkdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return existingDirectory(dir, err);
    throw err;
  }
}

/** Resolves when `dir`, which `mkdir` found existing, is a directory; else rejects `failure`. */
async function existingDirectory(dir: string, failure: unknown): Promise<void> {
  const s = await stat(dir).catch(() => undefined);
  if (s?.isDirectory() !== true) throw failure;
}
