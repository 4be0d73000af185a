/**
 * The starting points `statesync verify` checks against the replay (commands/verify.ts): each
 * one-message snapshot entry after the first retained one, and each switch entry. One whose
 * history a compaction or purge removed after verify started is not checked, and counted so
 * (`notChecked`): the removal says nothing of the log (a new-user trial: 6 of 37 runs beside
 * compacting replicas read DIVERGES, `TRUNCATED: revision 5142: revision 5141 is before the
 * retained history`, for a healthy log).
 */
import {
  decodeEntry,
  firstRetainedEntry,
  isStateSyncError,
  type JetStreamLog,
  type LogInfo,
} from "@statesync/node";
import type { AnyModel } from "./model-file.js";
import { shortJson } from "./output.js";
import { firstEntryProblem, type AnyReplica } from "./replica.js";
import { SERVER_GONE } from "./server-gone.js";
import { snapshotAtModel } from "./snapshot-state.js";
import { firstDifference } from "./verify-diff.js";
import { readWhole } from "./whole-read.js";

/** One way the log fails verification. */
export interface Divergence {
  revision: number;
  code: string;
  problem: string;
}

/** Failures to reach or read the log: they say nothing of its entries. */
export const NOT_A_DIVERGENCE = new Set([
  ...SERVER_GONE,
  "PERMISSION_DENIED",
  "STREAM_CONFIG",
  "UNSUPPORTED_SERVER",
  "CLOSED",
  "ABORTED",
  "LOG_REPLACED",
]);

/**
 * Compares each one-message snapshot entry after the first retained one with the replay at its
 * base (chunked ones are not assembled here), and each switch entry with the replay at its base
 * as the model migrates it: the replica's state at the switch (the carried state, migrated on
 * when the model is newer still) against its state at the base (the older version's replay,
 * migrated by the model's chain). Both through the engine, so the check is the replicas' own.
 * Every comparison is at the model's version, which the replay is at: a snapshot entry of an
 * older version has its state migrated up first, as a replica standing on it holds it
 * (`snapshotAtModel`; before, a v1 entry against a v2 replay read DIVERGES).
 * `from`: where the replica's read began (default the first retained revision); `start` in
 * the result: the revision of the replay's starting point, `from` or the first after it.
 */
export async function checkStartingPoints(
  log: JetStreamLog,
  info: LogInfo,
  replica: AnyReplica,
  model: AnyModel,
  found: Divergence[],
  from = info.firstRevision,
): Promise<{ snapshots: number; switches: number; notChecked: number; start: number }> {
  const checked = { snapshots: 0, switches: 0, notChecked: 0, start: from };
  // First retained entries that cannot start a replay (a purge undone in part): the replay starts
  // at the first starting point after them, which nothing before it can be checked against
  // (before, verify said DIVERGES: "revision 501 is before the retained history").
  const first = await firstRetainedEntry(log, from);
  let startAhead = !!first && !!firstEntryProblem(first.revision, decodeEntry(first.data));
  for await (const e of readWhole(log, from + 1, replica.revision)) {
    const d = decodeEntry(e.data);
    if (!d.ok) continue;
    const entry = d.entry;
    if (startAhead && firstEntryProblem(e.revision, d) === undefined) {
      startAhead = false; // the replay's starting point
      checked.start = e.revision;
      continue;
    }
    // A chunked snapshot's parts are checked (sha256, schema) by the replica that loads them.
    const snapshot = entry.kind === "snapshot" && !("parts" in entry);
    if (!snapshot && entry.kind !== "switch") continue;
    let replayed: unknown;
    let stored: unknown;
    let migratedFrom: number | undefined; // a snapshot entry of an older version
    let asked = entry.base; // the revision whose state is replayed
    try {
      replayed = await replica.stateAt(entry.base);
      if (entry.kind === "switch") stored = await replica.stateAt((asked = e.revision));
      else {
        // At the replay's version, --model's (a v1 entry read DIVERGES against a v2 replay).
        const at = snapshotAtModel(model, entry);
        stored = at.state;
        if (at.version !== model.version) migratedFrom = at.version;
      }
    } catch (err) {
      // A server gone during these replays says nothing of the entry (it used to count as a divergence).
      if (!isStateSyncError(err) || NOT_A_DIVERGENCE.has(err.code)) throw err;
      if (err.code === "TRUNCATED" && (await removedSince(log, info, asked))) {
        checked.notChecked += 1;
        continue;
      }
      found.push({ revision: e.revision, code: err.code, problem: err.message });
      continue;
    }
    const what = snapshot ? "snapshot entry" : "switch entry";
    if (snapshot) checked.snapshots += 1;
    else checked.switches += 1;
    const diff = firstDifference(replayed, stored);
    if (diff) {
      const replay = snapshot
        ? `the state replayed at its base ${entry.base}`
        : `the state replayed at its base ${entry.base}, migrated`;
      found.push({
        revision: e.revision,
        code: "CORRUPT_ENTRY",
        problem: `the ${what} differs from ${replay}: at ${diff.path} the replay has ${shortJson(diff.a, 60) || "nothing"}, the ${storedName(snapshot, migratedFrom, model)} ${shortJson(diff.b, 60) || "nothing"}`,
      });
    }
  }
  return checked;
}

/**
 * Whether `revision`, retained when verify started (`info`), has been removed since: a
 * compaction (its snapshot entry written before verify read the log, the history before it
 * removed after the replay) or a purge. The log as verify found it had it, so its absence now is
 * no problem of that log; a revision before the retained history already then (a gap no replica
 * can check the entry across) still is.
 */
async function removedSince(log: JetStreamLog, info: LogInfo, revision: number): Promise<boolean> {
  if (revision < info.firstRevision) return false;
  const now = await log.info();
  return now.firstRevision > revision || now.firstRevision === 0;
}

/** How a divergence names the stored side: "the snapshot (migrated to v2)" for an older one. */
function storedName(snapshot: boolean, migratedFrom: number | undefined, model: AnyModel): string {
  if (!snapshot) return "switch entry";
  return migratedFrom === undefined ? "snapshot" : `snapshot (migrated to v${model.version})`;
}
