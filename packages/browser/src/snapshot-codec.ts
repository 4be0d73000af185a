import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { snapshotRecordSchema, StateSyncError, type SnapshotRecord } from "@statesync/core";
import { z } from "zod/v4";
import { encodeJsonInSlices, yieldToEventLoop, type SliceOptions } from "./sliced-json.js";

/**
 * What `IndexedDbSnapshotStore` keeps under a key: the record as JSON text (`body`) with its
 * SHA-256, plus copies of `revision` and `logIdentity` for people inspecting the database in
 * devtools. `load` checks all of it.
 */
export interface StoredSnapshot {
  /** Value format; this library writes 1. */
  readonly v: 1;
  readonly revision: number;
  readonly logIdentity: string;
  /** SHA-256 (lowercase hex) of the UTF-8 bytes of `body`. */
  readonly sha256: string;
  /** `JSON.stringify` of the {@link SnapshotRecord}. */
  readonly body: string;
}

const storedSnapshotSchema = z.object({
  v: z.literal(1),
  revision: z.number().int().nonnegative(),
  logIdentity: z.string().min(1),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  body: z.string(),
});

/**
 * SHA-256 (hex) of the UTF-8 bytes of `text`, hashed about 64 K characters at a time, with a turn
 * of the event loop every 256 K. A piece never ends between the two halves of a surrogate pair.
 */
async function checksumInSlices(text: string): Promise<string> {
  const hash = sha256.create();
  const utf8 = new TextEncoder();
  let sinceYield = 0;
  for (let at = 0; at < text.length;) {
    let end = Math.min(text.length, at + 65_536);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1;
    hash.update(utf8.encode(text.slice(at, end)));
    sinceYield += end - at;
    at = end;
    if (sinceYield >= 262_144 && at < text.length) {
      sinceYield = 0;
      await yieldToEventLoop();
    }
  }
  return bytesToHex(hash.digest());
}

/**
 * Builds the stored value of `record`: its JSON text and the SHA-256 of that text, computed in
 * slices of about `sliceMs` (default 8 ms) that yield to the event loop between them (see
 * `encodeJsonInSlices`), so that a multi-megabyte state never blocks the page for long. The
 * record's state must not change meanwhile (the replica's state is deeply frozen).
 */
export async function encodeSnapshot(
  record: SnapshotRecord,
  options: SliceOptions = {},
): Promise<StoredSnapshot> {
  const hash = sha256.create();
  const utf8 = new TextEncoder();
  const body = await encodeJsonInSlices(record, (text) => hash.update(utf8.encode(text)), options);
  return {
    v: 1,
    revision: record.revision,
    logIdentity: record.logIdentity,
    sha256: bytesToHex(hash.digest()),
    body,
  };
}

/**
 * The revision and log identity a stored value claims in its header (zod-checked, without
 * reading the body), or undefined when it is not a value of format 1. Enough to decide whether a
 * save may replace it (a damaged body is caught by {@link decodeSnapshot} on load).
 */
export function storedHeader(
  value: unknown,
):
  { readonly revision: number; readonly logIdentity: string; readonly sha256: string } | undefined {
  const stored = storedSnapshotSchema.safeParse(value);
  return stored.success ? stored.data : undefined;
}

function corrupt(key: string, why: string, cause?: unknown): StateSyncError {
  return new StateSyncError("CORRUPT_SNAPSHOT", `snapshot ${key}: ${why}`, {
    cause,
    details: { key },
  });
}

/**
 * Checks a stored value and returns its record. Rejects with `StateSyncError("CORRUPT_SNAPSHOT")`
 * when the value has the wrong shape, the checksum does not match, the body is not JSON or not a
 * valid record (`snapshotRecordSchema`), or the copies of revision and log identity disagree.
 * The checksum is computed in slices; `JSON.parse` of the body is one native call.
 */
export async function decodeSnapshot(key: string, value: unknown): Promise<SnapshotRecord> {
  const stored = storedSnapshotSchema.safeParse(value);
  if (!stored.success) throw corrupt(key, "not a statesync snapshot of format 1", stored.error);
  const { body } = stored.data;
  if ((await checksumInSlices(body)) !== stored.data.sha256) {
    throw corrupt(key, "checksum mismatch");
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch (cause) {
    throw corrupt(key, "the record is not valid JSON", cause);
  }
  const record = snapshotRecordSchema.safeParse(parsed);
  if (!record.success) throw corrupt(key, "the record has an invalid shape", record.error);
  if (
    record.data.revision !== stored.data.revision ||
    record.data.logIdentity !== stored.data.logIdentity
  ) {
    throw corrupt(key, "the record does not match its header");
  }
  return record.data as SnapshotRecord;
}
