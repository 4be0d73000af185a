/** The types of a replay's moves (replay-state.ts): what a step did, what a re-anchoring replaced. */
import type { Entry, OriginRow } from "./entry.js";
import type { StateSyncError } from "./errors.js";
import type { Model } from "./model.js";

/** What one {@link Replay.step} did. */
export type StepResult =
  /** Already consumed (revision not above the current one): nothing happened. */
  | { kind: "ignored" }
  /**
   * Consumed and applied (or a no-op whose command failed: `error` is set). A chunked snapshot
   * entry loaded from its parts lists what replaying the entries held since them did (`replayed`).
   * `duplicate`: a re-sent queued update already applied, consumed without effect.
   */
  | {
      kind: "applied";
      entry: Entry;
      error?: StateSyncError;
      /** A `commands` entry's commands consumed without effect (`details.index`), in order. */
      failures?: StateSyncError[];
      replayed?: ReplayedStep[];
      duplicate?: true;
      /** The state this replay held when a re-anchoring replaced it (see {@link KeptOverReset}). */
      kept?: KeptOverReset;
    }
  /**
   * Held, the revision unchanged: the replica has no state to apply it to yet and waits for a
   * chunked snapshot entry whose parts it holds (see `ChunkCollector`). `error`: a chunked
   * snapshot entry refused (malformed parts), reported, not a stop.
   */
  | { kind: "pending"; error?: StateSyncError }
  /** Consumed without effect because it is malformed (every replica skips it alike). */
  | { kind: "skipped"; error: StateSyncError }
  /** Not consumed: the replica must stop before it. */
  | { kind: "stall"; error: StateSyncError };

/** What replaying one held entry did, when a chunked snapshot loaded: its revision and result. */
export interface ReplayedStep {
  readonly revision: number;
  readonly result: StepResult;
}

/**
 * What a replay held when a snapshot entry of the model's initial state, based on its own
 * revision, replaced it: the entry a replica without a state writes when it opens a log its
 * operator purged whole (`FirstEntry.reanchor`), read by a replica that stayed live across the
 * purge or restarted from a local snapshot. A replica that compacts writes this state back
 * (`writeBackOverReset`, engine/log-changes.ts) conditionally on `at`, the snapshot entry's
 * revision; before, the purge's race decided whether the state was kept or reset (stop 25's
 * trial, HIGH).
 */
export interface KeptOverReset {
  /** The revision of the snapshot entry that replaced the state. */
  readonly at: number;
  /** The revision of the state that was replaced. */
  readonly from: number;
  readonly state: unknown;
  readonly model: Model<any, any>;
  readonly recent: Array<[string, number, number]>;
  readonly switchedFrom: number | undefined;
  readonly origins: OriginRow[] | undefined;
}
