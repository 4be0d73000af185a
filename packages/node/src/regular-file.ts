// Its declarations name Node types: an app whose tsconfig lists no `types` (TypeScript 6+)
// gets them through this reference instead of errors inside this package.
/// <reference types="node" preserve="true" />
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readFileSync,
  statSync,
  type Stats,
} from "node:fs";
import { open, stat } from "node:fs/promises";

/**
 * Reading the files statesync finds in a directory it was given (snapshots, pending records,
 * queue and lock files) and the files an operator names (the CLI's backup), without ever
 * blocking on something that is not a regular file.
 *
 * A FIFO in place of such a file made a plain `readFile` wait for a writer that never comes: in
 * the thread pool, where no timeout reaches it, so the store's caller gave up after its own
 * limit, but the blocked thread kept the process from exiting after `close()`; a character
 * device such as `/dev/zero` is read without end. So the file is opened with `O_NONBLOCK` (which
 * opens a FIFO at once and changes nothing for a regular file), `fstat` says what it is, and
 * only a regular file is read; anything else is refused with the caller's typed error.
 */

/** Open flags: read only, never waiting for a FIFO's writer (`O_NONBLOCK` is 0 on Windows). */
const FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

/** What a path that is not a regular file holds, for messages: "a FIFO", "a directory", ... */
export function describeSpecialFile(stats: Stats): string {
  if (stats.isDirectory()) return "a directory";
  if (stats.isFIFO()) return "a FIFO";
  if (stats.isSocket()) return "a socket";
  if (stats.isCharacterDevice()) return "a character device";
  if (stats.isBlockDevice()) return "a block device";
  return "not a regular file";
}

/**
 * Reads the regular file at `path` (following symbolic links, as `readFile` does). Something
 * else there (a FIFO, a socket, a device, a directory) is never read: it throws what
 * `refuse(kind)` returns, `kind` saying what it is ("a FIFO"). Other failures (`ENOENT`, `EACCES`)
 * are thrown as Node's errors.
 */
export async function readRegularFile(
  path: string,
  refuse: (kind: string) => Error,
): Promise<Buffer> {
  let handle;
  try {
    handle = await open(path, FLAGS);
  } catch (err) {
    // A socket cannot be opened (ENXIO): say what it is when it can be told.
    if ((err as NodeJS.ErrnoException).code === "ENXIO") {
      const stats = await stat(path).catch(() => undefined);
      throw refuse(stats ? describeSpecialFile(stats) : "not a regular file");
    }
    throw err;
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw refuse(describeSpecialFile(stats));
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** {@link readRegularFile}, synchronously (for batches of small files read in one go). */
export function readRegularFileSync(path: string, refuse: (kind: string) => Error): Buffer {
  let fd: number;
  try {
    fd = openSync(path, FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENXIO") {
      const stats = statSync(path, { throwIfNoEntry: false });
      throw refuse(stats ? describeSpecialFile(stats) : "not a regular file");
    }
    throw err;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw refuse(describeSpecialFile(stats));
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
