import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import { snapshotRecordSchema, StateSyncError, type SnapshotRecord } from "@statesync/core";
import { z } from "zod/v4";

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

const checksum = (text: string): string => bytesToHex(sha256(new TextEncoder().encode(text)));

/** Builds the stored value of `record` (JSON text and checksum; synchronous, no I/O). */
export function encodeSnapshot(record: SnapshotRecord): StoredSnapshot {
  const body = JSON.stringify(record);
  return {
    v: 1,
    revision: record.revision,
    logIdentity: record.logIdentity,
    sha256: checksum(body),
    body,
  };
}

function corrupt(key: string, why: string, cause?: unknown): StateSyncError {
  return new StateSyncError("CORRUPT_SNAPSHOT", `snapshot ${key}: ${why}`, {
    cause,
    details: { key },
  });
}

/**
 * Checks a stored value and returns its record. Throws `StateSyncError("CORRUPT_SNAPSHOT")` when
 * the value has the wrong shape, the checksum does not match, the body is not JSON or not a
 * valid record (`snapshotRecordSchema`), or the copies of revision and log identity disagree.
 */
export function decodeSnapshot(key: string, value: unknown): SnapshotRecord {
  const stored = storedSnapshotSchema.safeParse(value);
  if (!stored.success) throw corrupt(key, "not a statesync snapshot of format 1", stored.error);
  const { body } = stored.data;
  if (checksum(body) !== stored.data.sha256) throw corrupt(key, "checksum mismatch");
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
