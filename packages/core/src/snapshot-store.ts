import { z } from "zod/v4";
import { MAX_STATE_DEPTH } from "./entry-limits.js";
import { StateSyncError } from "./errors.js";
import { findJsonProblemWithDepth } from "./json.js";
import { MAX_ORIGINS } from "./pending/origins.js";
import { jsonNestingFault, jsonNestingFaultInSlices, type JsonNestingFault } from "./nesting.js";

/**
 * A persisted replica: the state and the revision it was computed at, written together.
 * `logIdentity` and `messageId` let the engine check that the log still holds that exact entry
 * (a recreated stream, or a snapshot ahead of the log, is discarded).
 */
export interface SnapshotRecord {
  /** Format version of the record; this library writes 1. */
  readonly format: 1;
  /** Revision of the last entry consumed into `state`. */
  readonly revision: number;
  /** The state at `revision` (JSON value). */
  readonly state: unknown;
  /** `LogInfo.identity` of the log the state came from. */
  readonly logIdentity: string;
  /** Message id of the entry at `revision`, when it had one. */
  readonly messageId?: string | undefined;
  /** Model name and version that computed the state. */
  readonly model: string;
  readonly modelVersion: number;
  /** The version the log was at before its last switch, when it switched (docs/versions.md). */
  readonly switchedFrom?: number | undefined;
  /**
   * The table of applied origins at `revision` (`[origin, seq, revision][]`, docs/offline.md);
   * absent: empty.
   */
  readonly origins?: ReadonlyArray<readonly [string, number, number]> | undefined;
  /** When it was written, ms since the epoch (informational). */
  readonly savedAt: number;
}

/** zod schema of {@link SnapshotRecord}: stores validate what they load with it. */
export const snapshotRecordSchema = z.object({
  format: z.literal(1),
  revision: z.number().int().nonnegative(),
  state: z.unknown(),
  logIdentity: z.string().min(1),
  messageId: z.string().optional(),
  model: z.string().min(1),
  modelVersion: z.number().int().nonnegative(),
  switchedFrom: z.number().int().nonnegative().optional(),
  // As snapshot entries carry it (entry.ts): a table no entry may hold (more rows, other ids) made
  // every compaction and switch of the replica that loaded it fail VALIDATION, for good.
  origins: z
    .array(
      z.tuple([
        z.string().regex(/^[!-~]{1,64}$/),
        z.number().int().positive(),
        z.number().int().nonnegative(),
      ]),
    )
    .max(MAX_ORIGINS)
    .optional(),
  savedAt: z.number(),
});

/**
 * Where replicas persist state and revision (automerge-repo style narrow port). Keys are opaque
 * non-empty strings chosen by the engine (one per stream and key). Every method rejects
 * `StateSyncError("VALIDATION")` for a key that is no non-empty string ({@link checkSnapshotKey}),
 * reading and writing nothing. Implementations: `MemorySnapshotStore`, `FileSnapshotStore`
 * (Node), `IndexedDbSnapshotStore` (browser); all pass `runSnapshotStoreConformance` from
 * `@statesync/core/testing`.
 */
export interface SnapshotStore {
  /**
   * The record stored under `key`, or undefined when there is none. Throws
   * `StateSyncError("CORRUPT_SNAPSHOT")` when what is stored fails validation (checksum, shape).
   */
  load(key: string): Promise<SnapshotRecord | undefined>;
  /**
   * Stores `record` under `key` atomically (state and revision together). A record with a lower
   * revision than the stored one for the same `logIdentity` does not replace it. Rejects
   * `VALIDATION`, saving nothing, for a record {@link checkSnapshotRecord} refuses (the schema,
   * a state that is no JSON or nests too deep).
   */
  save(key: string, record: SnapshotRecord): Promise<void>;
  /** Removes the record under `key`; no error when there is none. */
  delete(key: string): Promise<void>;
  /** Releases resources. Optional. */
  close?(): Promise<void>;
}

/**
 * Whether `value` has the shape of a {@link SnapshotStore}: an object whose `load`, `save` and
 * `delete` are functions, and `close`, when present, too. What every option taking a store checks
 * (`createSynchronizer`'s and each `openSynchronizer`'s `snapshots`), so that a store without
 * `save` is refused when given, not a `TypeError` at its first save.
 */
export function isSnapshotStoreLike(value: unknown): value is SnapshotStore {
  if (typeof value !== "object" || value === null) return false;
  const store = value as Record<string, unknown>;
  return (
    ["load", "save", "delete"].every((m) => typeof store[m] === "function") &&
    (store.close === undefined || typeof store.close === "function")
  );
}

/**
 * Throws `VALIDATION` unless `key` is a non-empty string, the only keys a store takes (the engine
 * never passes another): stores call it first in `load`, `save` and `delete`, so that no other
 * value is turned into a string, or taken as a key by a database, and nothing is read or written.
 */
export function checkSnapshotKey(key: unknown): asserts key is string {
  if (typeof key !== "string" || key.length === 0) {
    throw new StateSyncError(
      "VALIDATION",
      `a snapshot key is a non-empty string, not ${key === "" ? "the empty string" : typeof key}; nothing was read or written`,
    );
  }
}

/**
 * The record a store's `save` keeps, or `VALIDATION` (nothing saved) when `record` fails
 * `snapshotRecordSchema` or its state is no JSON value (`undefined` members, `NaN`, a `Date`,
 * a cycle, see `findJsonProblem`) or nests deeper than `MAX_STATE_DEPTH` levels, which no store
 * keeps (a replica refuses such a state at load). The walk is iterative, proportional to the
 * state's size, and runs before anything recursive (`JSON.stringify`) touches the state. What it
 * returns is the record as the schema reads it: keys the schema does not know are left out, as
 * `load` leaves them out; the state is the same object. The engine never saves a record it
 * refuses; this is for other callers.
 */
export function checkSnapshotRecord(record: unknown): SnapshotRecord {
  const checked = parseRecord(record);
  throwFault(checked, jsonNestingFault(checked.state, MAX_STATE_DEPTH));
  return checked;
}

/** {@link checkSnapshotRecord} in slices that give the event loop a turn (a page's store). */
export async function checkSnapshotRecordInSlices(record: unknown): Promise<SnapshotRecord> {
  const checked = parseRecord(record);
  throwFault(checked, await jsonNestingFaultInSlices(checked.state, MAX_STATE_DEPTH));
  return checked;
}

function parseRecord(record: unknown): SnapshotRecord {
  const parsed = snapshotRecordSchema.safeParse(record);
  if (parsed.success) return parsed.data as SnapshotRecord;
  const issue = parsed.error.issues[0];
  throw new StateSyncError(
    "VALIDATION",
    `invalid snapshot record: ${issue?.path.join(".") || "record"}: ${issue?.message ?? ""}; nothing was saved`,
    { cause: parsed.error },
  );
}

function throwFault(record: SnapshotRecord, fault: JsonNestingFault): void {
  if (fault === "deeper") {
    throw new StateSyncError(
      "VALIDATION",
      `the snapshot's state nests arrays and objects deeper than ${MAX_STATE_DEPTH} levels, more than a log entry may hold (docs/format.md, "Limits"), or contains itself; nothing was saved`,
      { details: { maxDepth: MAX_STATE_DEPTH } },
    );
  }
  if (fault === "not-json") {
    const problem = findJsonProblemWithDepth(record.state, MAX_STATE_DEPTH);
    const where = problem ? `${problem.path}: ${problem.message}` : "";
    throw new StateSyncError(
      "VALIDATION",
      `the snapshot's state is not JSON (${where}); nothing was saved`,
      { details: { path: problem?.path } },
    );
  }
}

/**
 * Decides whether `incoming` may replace `stored` under the "only replaces an older revision"
 * rule every store follows: a record of another log identity always replaces (the log was
 * recreated); within one log the higher-or-equal revision wins.
 */
export function shouldReplaceSnapshot(
  stored: Pick<SnapshotRecord, "revision" | "logIdentity"> | undefined,
  incoming: Pick<SnapshotRecord, "revision" | "logIdentity">,
): boolean {
  if (stored === undefined) return true;
  if (stored.logIdentity !== incoming.logIdentity) return true;
  return incoming.revision >= stored.revision;
}
