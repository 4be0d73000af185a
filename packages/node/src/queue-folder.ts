import { createHash, randomBytes } from "node:crypto";
import { readdir, stat, unlink } from "node:fs/promises";
import { join } from "node:path";
import { MAX_PENDING_SEQ, StateSyncError } from "@statesync/core";
import { writeFileAtomically } from "./atomic-file.js";
import { UNREADABLE_LOCK_MS } from "./queue-lock.js";
import { readRegularFile } from "./regular-file.js";

/**
 * The files of a `FilePendingStore` queue folder besides its records: where the folder is, its
 * `queue.json` (the queue's origin and highest seq), and the leftovers of a holder that died.
 */

/** SHA-256 of `text` (UTF-8), hex. */
export const sha256 = (text: string): string =>
  createHash("sha256").update(text, "utf8").digest("hex");
const readable = (s: string) => s.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 48);

/** Marks the files of a queue; `v` is the file format version. */
const QUEUE_KIND = "statesync-pending-queue";
export const META = "queue.json";
/** `queue.json`: the queue's identity in the log and the highest seq it ever put. */
export interface MetaFile {
  kind: typeof QUEUE_KIND;
  v: 1;
  key: string;
  owner: string;
  origin: string;
  /** The highest seq ever put, written when a delete or clear removes the highest one. */
  highSeq: number;
}

/**
 * The folder of the queue of `(key, owner)` inside a store's directory: readable prefixes and
 * 16 hex digits of SHA-256, so distinct keys or owners never share one, also on case-insensitive
 * file systems.
 */
export function pendingQueueFolder(key: string, owner: string): string {
  return `${readable(key)}-${sha256(key).slice(0, 16)}.pending/${readable(owner)}-${sha256(owner).slice(0, 16)}`;
}

/**
 * What a damaged `queue.json` error says to do: the records do not depend on it (each carries
 * its origin; a queue's seqs start above its clock × 1,024), and a missing one is created again.
 */
const RECOVER =
  " (its pending updates are in their own files: remove queue.json, or move it aside, and the queue opens with them)";

/**
 * Largest `highSeq` taken from `queue.json`: the bound of every seq (`MAX_PENDING_SEQ`, half the
 * safe integers; record files named above it are damaged, `FilePendingStore.load`). Seqs start at
 * the clock × 1,024 when a queue opens (`firstSeq`), which reaches 2^52 in the year 2112, so a
 * larger one is damage (one near 2^53 made every later update fail: no seq was left; a
 * fresh-eyes trial). Not tied to this clock: a clock set back (a dead RTC battery before NTP)
 * must not make a sound queue unreadable (a trial: a clock 2 years behind failed the open with
 * "not a statesync queue").
 */
const MAX_HIGH_SEQ = MAX_PENDING_SEQ;

/** Reads `queue.json` of the queue of `(key, owner)`, or creates it (a new origin). */
export async function readOrCreateMeta(
  folder: string,
  key: string,
  owner: string,
): Promise<MetaFile> {
  const path = join(folder, META);
  try {
    const text = await readRegularFile(path, (kind) =>
      failed(`${path} is ${kind}, not a statesync queue of ${key} for ${owner}`),
    );
    const meta = JSON.parse(text.toString("utf8")) as Partial<MetaFile>;
    if (
      meta.kind === QUEUE_KIND &&
      meta.v === 1 &&
      meta.key === key &&
      meta.owner === owner &&
      typeof meta.origin === "string" &&
      /^[!-~]{1,64}$/.test(meta.origin) &&
      Number.isSafeInteger(meta.highSeq) &&
      meta.highSeq! >= 0 &&
      meta.highSeq! <= MAX_HIGH_SEQ
    ) {
      return meta as MetaFile;
    }
    throw failed(`${path} is not a statesync queue of ${key} for ${owner}${RECOVER}`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") {
      throw err instanceof StateSyncError ? err : failed(`cannot read ${path}${RECOVER}`, err);
    }
  }
  const meta: MetaFile = {
    kind: QUEUE_KIND,
    v: 1,
    key,
    owner,
    origin: randomBytes(12).toString("base64url"),
    highSeq: 0,
  };
  await writeFileAtomically(folder, path, JSON.stringify(meta));
  return meta;
}

/** Temporary files of a holder that died mid-write (the lock is ours now), old takeovers'. */
export async function removeTemporaries(folder: string): Promise<void> {
  for (const name of await readdir(folder)) {
    const path = join(folder, name);
    if (name.endsWith(".tmp")) await unlink(path).catch(() => undefined);
    // A takeover's leftover (its process died): old ones only, a fresh one may be in use.
    if (name.endsWith(".stale")) {
      const age = Date.now() - (await stat(path).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if (age > UNREADABLE_LOCK_MS) await unlink(path).catch(() => undefined);
    }
  }
}

/** A `QUEUE_FAILED` error: the queue's files could not be read or written. */
export function failed(
  message: string,
  cause?: unknown,
  details?: Record<string, unknown>,
): StateSyncError {
  return new StateSyncError("QUEUE_FAILED", message, { cause, ...(details ? { details } : {}) });
}
