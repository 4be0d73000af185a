/**
 * A one-message snapshot entry's state at the version `verify` compares at: `--model`'s. The
 * replay `verify` compares it with is a replica of `--model`, whose state is the log's migrated
 * up (docs/versions.md), so an entry of an older version (written before the log switched, or
 * in a log not switched yet) is migrated up the model's chain first, with the engine's own
 * `logModelOf` and `migrateUp`, as a replica that stands on the entry holds it. Before, the
 * entry's state was compared as it is, and a healthy log read DIVERGES (`at /tags the replay
 * has [], the snapshot nothing`).
 */
import { logModelOf, migrateUp, StateSyncError, type SnapshotEntry } from "@statesync/node";
import type { AnyModel } from "./model-file.js";

/** The entry's state at `model`'s version, and the version it was written at. */
export interface SnapshotAtModel {
  readonly state: unknown;
  /** The entry's own version (lower than `model`'s when its state was migrated). */
  readonly version: number;
}

/**
 * The state of `entry` migrated from its version up to `model`'s (as it is when they match).
 * Throws what a replica of `model` stops with there: `MODEL_UPGRADED` (a newer version),
 * `MODEL_MISMATCH` (another model, another initial state, a version the chain lacks), or
 * `VALIDATION` naming the version whose `migrate` fails on it.
 */
export function snapshotAtModel(model: AnyModel, entry: SnapshotEntry): SnapshotAtModel {
  const from = logModelOf(model, entry);
  if (from instanceof StateSyncError) throw from;
  if (from === model) return { state: entry.state, version: entry.version };
  try {
    return { state: migrateUp(model, from, entry.state), version: entry.version };
  } catch (err) {
    if (!(err instanceof StateSyncError)) throw err;
    throw new StateSyncError(
      err.code,
      `the snapshot entry's state (v${entry.version}) does not migrate to v${model.version}: ${err.message}`,
      { cause: err, details: err.details },
    );
  }
}
