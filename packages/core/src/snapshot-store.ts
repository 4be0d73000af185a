import { z } from "zod/v4";
import { MAX_STATE_DEPTH } from "./entry-limits.js";
import { StateSyncError } from "./errors.js";
import { nestedDeeperThan, nestedDeeperThanInSlices } from "./nesting.js";

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
  origins: z
    .array(
      z.tuple([z.string().min(1), z.number().int().positive(), z.number().int().nonnegative()]),
    )
    .optional(),
  savedAt: z.number(),
});

/**
 * Where replicas persist state and revision (automerge-repo style narrow port). Keys are opaque
 * strings chosen by the engine (one per stream and key). Implementations: `MemorySnapshotStore`,
 * `FileSnapshotStore` (Node), `IndexedDbSnapshotStore` (browser); all pass
 * `runSnapshotStoreConformance` from `@statesync/core/testing`.
 */
export interface SnapshotStore {
  /**
   * The record stored under `key`, or undefined when there is none. Throws
   * `StateSyncError("CORRUPT_SNAPSHOT")` when what is stored fails validation (checksum, shape).
   */
  load(key: string): Promise<SnapshotRecord | undefined>;
  /**
   * Stores `record` under `key` atomically (state and revision together). A record with a lower
   * revision than the stored one for the same `logIdentity` does not replace it.
   */
  save(key: string, record: SnapshotRecord): Promise<void>;
  /** Removes the record under `key`; no error when there is none. */
  delete(key: string): Promise<void>;
  /** Releases resources. Optional. */
  close?(): Promise<void>;
}

/**
 * Throws `VALIDATION` when `record`'s state nests deeper than `MAX_STATE_DEPTH` levels, which no
 * store keeps (a replica refuses such a state at load as `CORRUPT_SNAPSHOT`): stores call it in
 * `save` before anything recursive (`JSON.stringify`) touches the state. The engine never saves
 * such a state; this is for other callers. Iterative, proportional to the state's size.
 */
export function checkSnapshotDepth(record: SnapshotRecord): void {
  if (nestedDeeperThan(record.state, MAX_STATE_DEPTH)) throw snapshotTooDeep();
}

/** {@link checkSnapshotDepth} in slices that give the event loop a turn (a page's store). */
export async function checkSnapshotDepthInSlices(record: SnapshotRecord): Promise<void> {
  if (await nestedDeeperThanInSlices(record.state, MAX_STATE_DEPTH)) throw snapshotTooDeep();
}

function snapshotTooDeep(): StateSyncError {
  return new StateSyncError(
    "VALIDATION",
    `the snapshot's state nests arrays and objects deeper than ${MAX_STATE_DEPTH} levels, more than a log entry may hold (docs/format.md, "Limits"); nothing was saved`,
    { details: { maxDepth: MAX_STATE_DEPTH } },
  );
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
