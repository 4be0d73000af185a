import { createHash } from "node:crypto";
import { lstat, readdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { isRunning, writeFileAtomically } from "./atomic-file.js";
import { makeDir } from "./make-dir.js";
import { readRegularFile } from "./regular-file.js";
import {
  checkSnapshotKey,
  checkSnapshotRecord,
  shouldReplaceSnapshot,
  snapshotRecordSchema,
  StateSyncError,
  type SnapshotRecord,
  type SnapshotStore,
} from "@statesync/core";

/** Marks a statesync snapshot file; `v` is the file format version. */
const FILE_KIND = "statesync-snapshot";

interface SnapshotFile {
  kind: typeof FILE_KIND;
  v: 1;
  /** The key, for people reading the directory. */
  key: string;
  /** SHA-256 (hex) of `body`. */
  sha256: string;
  /** The record as JSON text. */
  body: string;
}

const sha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

/**
 * The file of `key`: a readable prefix (the key with anything but `[A-Za-z0-9_-]` turned into
 * `_`, at most 48 characters) and 16 hex digits of the key's SHA-256, so distinct keys never
 * share a file, also on case-insensitive file systems. Throws `VALIDATION` for a key that is no
 * non-empty string.
 */
export function snapshotFileName(key: string): string {
  checkSnapshotKey(key);
  const readable = key.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 48);
  return `${readable}-${sha256(key).slice(0, 16)}.snapshot.json`;
}

function corrupt(key: string, why: string, cause?: unknown): StateSyncError {
  return new StateSyncError("CORRUPT_SNAPSHOT", `snapshot ${key}: ${why}`, {
    cause,
    details: { key },
  });
}

/**
 * A {@link SnapshotStore} on disk: one file per key in `dir` (created on first save). A file is
 * JSON `{ kind, v, key, sha256, body }` where `body` is the record's JSON text and `sha256` its
 * checksum; `load` checks both and validates the record with `snapshotRecordSchema`, so a
 * truncated, bit-flipped or foreign file throws `StateSyncError("CORRUPT_SNAPSHOT")` rather than
 * returning garbage. So does anything there that is not a regular file (a FIFO, a socket, a
 * device, a directory): it is never read, and never waited on (see `readRegularFile`); the next
 * save replaces it, but a directory, which is never removed: the save fails, saying to remove
 * it, and so does `delete` (`SNAPSHOT_FAILED`), so a replica reports that it ignores the snapshot
 * rather than that it discarded it. A key that is no non-empty string, or a record
 * `checkSnapshotRecord` refuses, is `VALIDATION`: no file is read, written or removed.
 *
 * Saves are atomic (temporary file in the same directory, write, fsync, rename, fsync of the
 * directory) and follow `shouldReplaceSnapshot` (never replace a newer revision of the same log).
 * Saves and deletes of one key are serialized within this process; two processes sharing a
 * directory may interleave (each file stays whole, the last rename wins). A process killed
 * mid-save leaves its temporary file (`<file>.<pid>.<hex>.tmp`) behind; the first save of a
 * later store on the directory removes those whose process no longer runs on this machine.
 */
export class FileSnapshotStore implements SnapshotStore {
  private readonly queues = new Map<string, Promise<unknown>>();
  private dirReady: Promise<unknown> | undefined;

  /** @param dir directory of the snapshot files; created when missing. */
  constructor(readonly dir: string) {
    if (typeof dir !== "string" || dir.length === 0) {
      throw new StateSyncError("VALIDATION", "FileSnapshotStore needs a directory path");
    }
  }

  /** Path of the file holding `key`. */
  pathOf(key: string): string {
    return join(this.dir, snapshotFileName(key));
  }

  async load(key: string): Promise<SnapshotRecord | undefined> {
    checkSnapshotKey(key);
    let text: string;
    try {
      const data = await readRegularFile(this.pathOf(key), (kind) =>
        corrupt(key, `the file is ${kind}, not a regular file`),
      );
      text = data.toString("utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
    let file: Partial<SnapshotFile>;
    try {
      file = JSON.parse(text) as Partial<SnapshotFile>;
    } catch (cause) {
      throw corrupt(key, "the file is not valid JSON (truncated?)", cause);
    }
    if (
      typeof file !== "object" ||
      file === null ||
      file.kind !== FILE_KIND ||
      file.v !== 1 ||
      typeof file.body !== "string" ||
      typeof file.sha256 !== "string"
    ) {
      throw corrupt(key, "the file is not a statesync snapshot of format 1");
    }
    if (sha256(file.body) !== file.sha256) throw corrupt(key, "checksum mismatch");
    if (file.key !== key) throw corrupt(key, "the file belongs to another key");
    let parsed: unknown;
    try {
      parsed = JSON.parse(file.body);
    } catch (cause) {
      throw corrupt(key, "the record is not valid JSON", cause);
    }
    const result = snapshotRecordSchema.safeParse(parsed);
    if (!result.success) throw corrupt(key, "the record has an invalid shape", result.error);
    return result.data as SnapshotRecord;
  }

  save(key: string, record: SnapshotRecord): Promise<void> {
    let checked: SnapshotRecord;
    try {
      checkSnapshotKey(key);
      checked = checkSnapshotRecord(record);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.serialize(key, async () => {
      let stored: SnapshotRecord | undefined;
      try {
        stored = await this.load(key);
      } catch {
        stored = undefined; // a damaged file is replaced
      }
      if (!shouldReplaceSnapshot(stored, checked)) return;
      const body = JSON.stringify(checked);
      const file: SnapshotFile = { kind: FILE_KIND, v: 1, key, sha256: sha256(body), body };
      await this.writeAtomically(this.pathOf(key), JSON.stringify(file));
    });
  }

  delete(key: string): Promise<void> {
    try {
      checkSnapshotKey(key);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.serialize(key, async () => {
      const path = this.pathOf(key);
      try {
        await unlink(path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
        // EISDIR (Linux), EPERM (macOS): a directory may hold anything, so it is left alone.
        if (!(await lstat(path).catch(() => undefined))?.isDirectory()) throw err;
        throw new StateSyncError(
          "SNAPSHOT_FAILED",
          `snapshot ${key}: the file is a directory, which is never removed for you: remove it or move it away (${path})`,
          { cause: err, details: { key } },
        );
      }
    });
  }

  private serialize<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(key) ?? Promise.resolve();
    const run = previous.then(task, task);
    const settled = run.catch(() => undefined);
    this.queues.set(key, settled);
    void settled.then(() => {
      if (this.queues.get(key) === settled) this.queues.delete(key);
    });
    return run;
  }

  private async writeAtomically(path: string, text: string): Promise<void> {
    this.dirReady ??= makeDir(this.dir).then(
      () => removeStaleTemporaries(this.dir),
      (err: unknown) => {
        this.dirReady = undefined;
        throw err;
      },
    );
    await this.dirReady;
    await writeFileAtomically(this.dir, path, text);
  }
}

/** `<name>.snapshot.json.<pid>.<8 hex>.tmp`: a temporary file of {@link FileSnapshotStore}. */
const TEMPORARY = /^.+\.snapshot\.json\.(\d+)\.[0-9a-f]{8}\.tmp$/;

/**
 * Removes the temporary files that processes killed in the middle of a save left in `dir`
 * (best effort: a file that cannot be listed or removed is left alone). Files of running
 * processes, this one included, may be mid-write and are kept.
 */
async function removeStaleTemporaries(dir: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return;
  }
  await Promise.all(
    names.map(async (name) => {
      const pid = Number(TEMPORARY.exec(name)?.[1] ?? Number.NaN);
      if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || isRunning(pid)) return;
      await unlink(join(dir, name)).catch(() => undefined);
    }),
  );
}
