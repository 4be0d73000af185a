/**
 * `statesync verify --model PATH`: replays the retained log with the engine and checks that
 * every entry applies (none is skipped as malformed, no command fails, the replay does not stop)
 * and that every snapshot entry after the first retained one holds the state the replay reaches
 * at its base (both at the model's version: an older entry's state migrated up), and every
 * switch entry the state the model's migrate makes of it; finally that
 * the replayed state passes the model's schema. Exit 0 when all hold;
 * otherwise exit 1 with where the replay stops (it stops every replica there), or else the first
 * problem by revision: its revision, its code and what differs; the `result` says which kind
 * ({@link VerifyResult}: skipped entries are not a divergence, every replica skips them alike).
 */
import type { Command } from "commander";
import {
  decodeEntry,
  firstRetainedEntry,
  isStateSyncError,
  safeParse,
  StateSyncError,
  type JetStreamLog,
  type LogInfo,
} from "@statesync/node";
import { z } from "zod";
import { action } from "../action.js";
import { loadModel, type AnyModel } from "../model-file.js";
import { addCommonOptions, parseCommon, parseWith } from "../options.js";
import { block, printJson, printLines, shortJson } from "../output.js";
import { firstEntryProblem, withReplica, type AnyReplica } from "../replica.js";
import { SERVER_GONE } from "../server-gone.js";
import { withLog, withSession } from "../session.js";
import { snapshotAtModel } from "../snapshot-state.js";
import { firstDifference } from "../verify-diff.js";
import { invalidSince } from "../invalid-since.js";
import { readWhole } from "../whole-read.js";
import { MODEL_OPTION } from "./state.js";

/** One way the log fails verification. */
export interface Divergence {
  revision: number;
  code: string;
  problem: string;
}

/**
 * What verification found, worst first: the replay stops (`stops`); a snapshot or switch entry
 * differs from the replay, so replicas starting from it hold another state than those that
 * replayed (`diverges`); a shared stream's key started again from a genesis entry after its
 * entries, every replica's state becoming the initial state (`restarts`); entries every replica
 * skips or makes a no-op of alike, the replicas agreeing (`skips`); the replayed state fails the
 * model's schema (`invalid-state`); or `ok`.
 */
export type VerifyResult = "ok" | "stops" | "diverges" | "restarts" | "skips" | "invalid-state";

/** The `--json` output of `verify`. */
export interface VerifyReport {
  ok: boolean;
  /** See {@link VerifyResult}. */
  result: VerifyResult;
  /**
   * The latest revision replayed (the one before `stoppedAt` when the replay stopped: below
   * `firstRevision` when it stopped at the first retained entry, nothing replayed).
   */
  revision: number;
  /**
   * The revision of the entry where the replay stopped (every replica stops there too: an
   * unknown command, a newer format, a newer model version), or null.
   */
  stoppedAt: number | null;
  /** First retained revision (the replay starts there). */
  firstRevision: number;
  /** Snapshot entries compared with the replay. */
  snapshotsChecked: number;
  /** Switch entries compared with the model's migration of the replay. */
  switchesChecked: number;
  /**
   * The stop when the replay stopped (it halts every replica), else the first divergence by
   * revision; null when ok. `divergences` counts all that were found.
   */
  divergence: Divergence | null;
  divergences: number;
  /**
   * Every problem found, by revision: the stop, divergences, skipped entries, an invalid final
   * state (at most {@link MAX_PROBLEMS}; `divergences` counts them all).
   */
  problems: Divergence[];
  /** How many entries every replica skips or makes a no-op of (the `skips` result counts them). */
  skipped: number;
  /**
   * Why the replayed state fails the model's schema, or null when it passes (or the replay
   * stopped first). Set whatever the `result`: a log that also skips or diverges is reported by
   * its worst finding, and this says the state is invalid too.
   */
  invalidState: string | null;
  /**
   * The revision of the entry after which the state has failed the schema ever since (the first
   * retained revision when the starting point carries it), or null (the state passes, or it
   * could not be told).
   */
  invalidSince: number | null;
}

/** The most problems `--json` lists (a log of a million malformed entries stays readable). */
export const MAX_PROBLEMS = 1_000;

const verifySchema = z.object({
  model: z.string({ error: "PATH is required (a .js/.mjs module exporting the model)" }),
});

/** Failures to reach or read the log: they say nothing of its entries. */
const NOT_A_DIVERGENCE = new Set([
  ...SERVER_GONE,
  "PERMISSION_DENIED",
  "STREAM_CONFIG",
  "UNSUPPORTED_SERVER",
  "CLOSED",
  "ABORTED",
  "LOG_REPLACED",
]);

function revisionOf(e: StateSyncError, fallback: number): number {
  const r = e.details.revision;
  return typeof r === "number" ? r : fallback;
}

/**
 * Compares each one-message snapshot entry after the first retained one with the replay at its
 * base (chunked ones are not assembled here), and each switch entry with the replay at its base
 * as the model migrates it: the replica's state at the switch (the carried state, migrated on
 * when the model is newer still) against its state at the base (the older version's replay,
 * migrated by the model's chain). Both through the engine, so the check is the replicas' own.
 * Every comparison is at the model's version, which the replay is at: a snapshot entry of an
 * older version has its state migrated up first, as a replica standing on it holds it
 * (`snapshotAtModel`; before, a v1 entry against a v2 replay read DIVERGES).
 */
async function checkStartingPoints(
  log: JetStreamLog,
  info: LogInfo,
  replica: AnyReplica,
  model: AnyModel,
  found: Divergence[],
): Promise<{ snapshots: number; switches: number }> {
  const checked = { snapshots: 0, switches: 0 };
  // First retained entries that cannot start a replay (a purge undone in part): the replay starts
  // at the first starting point after them, which nothing before it can be checked against
  // (before, verify said DIVERGES: "revision 501 is before the retained history").
  const first = await firstRetainedEntry(log, info.firstRevision);
  let startAhead = !!first && !!firstEntryProblem(first.revision, decodeEntry(first.data));
  for await (const e of readWhole(log, info.firstRevision + 1, replica.revision)) {
    const d = decodeEntry(e.data);
    if (!d.ok) continue;
    const entry = d.entry;
    if (startAhead && firstEntryProblem(e.revision, d) === undefined) {
      startAhead = false; // the replay's starting point
      continue;
    }
    // A chunked snapshot's parts are checked (sha256, schema) by the replica that loads them.
    const snapshot = entry.kind === "snapshot" && !("parts" in entry);
    if (!snapshot && entry.kind !== "switch") continue;
    let replayed: unknown;
    let stored: unknown;
    let migratedFrom: number | undefined; // a snapshot entry of an older version
    try {
      replayed = await replica.stateAt(entry.base);
      if (entry.kind === "switch") stored = await replica.stateAt(e.revision);
      else {
        // At the replay's version, --model's (a v1 entry read DIVERGES against a v2 replay).
        const at = snapshotAtModel(model, entry);
        stored = at.state;
        if (at.version !== model.version) migratedFrom = at.version;
      }
    } catch (err) {
      // A server gone during these replays says nothing of the entry (it used to count as a divergence).
      if (!isStateSyncError(err) || NOT_A_DIVERGENCE.has(err.code)) throw err;
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

/** How a divergence names the stored side: "the snapshot (migrated to v2)" for an older one. */
function storedName(snapshot: boolean, migratedFrom: number | undefined, model: AnyModel): string {
  if (!snapshot) return "switch entry";
  return migratedFrom === undefined ? "snapshot" : `snapshot (migrated to v${model.version})`;
}

/** Replays and checks the log (see the module header). */
export async function verifyLog(log: JetStreamLog, open: OpenReplica): Promise<VerifyReport> {
  const info = await log.info();
  const found: Divergence[] = [];
  const report: VerifyReport = {
    ok: true,
    result: "ok",
    revision: info.latestRevision,
    stoppedAt: null,
    firstRevision: info.firstRevision,
    snapshotsChecked: 0,
    switchesChecked: 0,
    divergence: null,
    divergences: 0,
    problems: [],
    skipped: 0,
    invalidState: null,
    invalidSince: null,
  };
  // The entries the engine reported skipping or making a no-op of (every replica alike).
  const skipped = new Set<Divergence>();
  // A shared stream's key that started again from a genesis entry (every replica alike; before,
  // counted among the skips: a trial, stop 36).
  const restarts = new Set<Divergence>();
  let invalid: Divergence | undefined;
  const onError = (e: StateSyncError) => {
    // The stream's configuration (a warning such as deny_delete off) is no divergence of the log,
    // nor a sequence the server used up, which holds no entry (docs/servers.md).
    if (e.code === "STREAM_CONFIG" || e.code === "SKIPPED_SEQUENCE") return;
    const skip = { revision: revisionOf(e, 0), code: e.code, problem: e.message };
    (e.details.restartedAt === undefined ? skipped : restarts).add(skip);
    found.push(skip);
  };
  try {
    await open(async (replica, model) => {
      if (!replica) return;
      report.revision = replica.revision;
      const checked = await checkStartingPoints(log, info, replica, model, found);
      report.snapshotsChecked = checked.snapshots;
      report.switchesChecked = checked.switches;
      const valid = safeParse(model.state, replica.state); // a refinement that throws fails it
      if (!valid.success) {
        const issue = valid.error.issues[0];
        // Which entry put it there (a trial: only the last revision was named).
        const since = await invalidSince(
          (r) => replica.stateAt(r),
          (state) => safeParse(model.state, state).success,
          info.firstRevision,
          replica.revision,
        );
        report.invalidSince = since ?? null;
        const origin = since === undefined ? "" : `, since revision ${since}`;
        found.push(
          (invalid = {
            revision: replica.revision,
            code: "VALIDATION",
            problem: `the replayed state fails the model's schema${origin}: ${issue?.message ?? ""} at /${issue?.path.join("/") ?? ""}`,
          }),
        );
      }
    }, onError);
  } catch (err) {
    // The replay stopped (an unknown command, a newer format, a gap, another model).
    if (!isStateSyncError(err) || NOT_A_DIVERGENCE.has(err.code)) throw err;
    const at = revisionOf(err, info.firstRevision);
    // The stall may have been reported as an "error" event already: count it once.
    if (!found.some((f) => f.revision === at && f.code === err.code)) {
      found.push({ revision: at, code: err.code, problem: err.message });
    }
    report.stoppedAt = at;
    report.revision = at - 1; // at the first retained entry: nothing replayed
  }
  found.sort((a, b) => a.revision - b.revision);
  report.ok = found.length === 0;
  report.divergence =
    (report.stoppedAt === null ? undefined : found.find((f) => f.revision === report.stoppedAt)) ??
    found[0] ??
    null;
  report.divergences = found.length;
  report.problems = found.slice(0, MAX_PROBLEMS);
  const skips = [...skipped].filter((f) => f.revision !== report.stoppedAt); // not the stop itself
  report.skipped = new Set(skips.map((f) => f.revision)).size;
  report.invalidState = invalid?.problem ?? null;
  const other = found.filter((f) => !skipped.has(f) && !restarts.has(f) && f !== invalid);
  report.result =
    report.stoppedAt !== null
      ? "stops"
      : other.length > 0
        ? "diverges"
        : restarts.size > 0
          ? "restarts"
          : report.skipped > 0
            ? "skips"
            : invalid
              ? "invalid-state"
              : "ok";
  return report;
}

/**
 * The `result` line: what the report's `result` means, in words, and an invalid state after a
 * worse finding (a fresh-eyes trial: a log that skipped entries and left a state failing the
 * schema led with the skips alone; the invalid state showed only in `--json`).
 */
function resultText(report: VerifyReport): string {
  const worst = worstText(report);
  return report.invalidState !== null && report.result !== "invalid-state"
    ? `${worst}; INVALID STATE`
    : worst;
}

function worstText(report: VerifyReport): string {
  switch (report.result) {
    case "ok":
      return "ok";
    case "stops":
      // A stream purged whole retains nothing: there is no revision to name (a trial: "at 0").
      return report.stoppedAt === 0
        ? "STOPS: the log retains no entry"
        : `STOPS at revision ${report.stoppedAt}`;
    case "diverges":
      return "DIVERGES";
    case "restarts":
      return "RESTARTS: a genesis entry after the state's entries makes it the initial state again (every replica alike)";
    case "skips": {
      const n = report.skipped;
      return `SKIPS ${n} entr${n === 1 ? "y" : "ies"} (every replica alike)`;
    }
    case "invalid-state":
      return "INVALID STATE";
  }
}

/** Opens the replica for {@link verifyLog} and hands it over with its model. */
type OpenReplica = (
  use: (replica: AnyReplica | undefined, model: AnyModel) => Promise<void>,
  onError: (e: StateSyncError) => void,
) => Promise<void>;

/** Adds `verify` to `program`. */
export function registerVerify(program: Command): void {
  addCommonOptions(
    program
      .command("verify")
      .description("replay the retained log; check every entry applies and every snapshot entry")
      .option(...MODEL_OPTION),
  ).action(
    action(async (raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const args = parseWith(verifySchema, { model: raw.model });
      const model = await loadModel(args.model);
      const report = await withSession(o, (s) =>
        withLog(s, (log) =>
          verifyLog(log, (use, onError) =>
            withReplica(log, model, (replica) => use(replica, model), onError),
          ),
        ),
      );
      if (o.json) printJson(report);
      else {
        printLines(
          block([
            ["result", resultText(report)],
            [
              "replayed",
              report.firstRevision === 0
                ? "nothing (the log retains no entry)"
                : report.revision < report.firstRevision
                  ? `nothing (the replay stops at the first retained revision, ${report.firstRevision})`
                  : `revisions ${report.firstRevision} to ${report.revision}`,
            ],
            ...(report.invalidState !== null
              ? [["state", report.invalidState] as [string, string]]
              : []),
            ["snapshot entries", `${report.snapshotsChecked} checked against the replay`],
            ...(report.switchesChecked > 0
              ? [
                  [
                    "switch entries",
                    `${report.switchesChecked} checked against the migrated replay`,
                  ] as [string, string],
                ]
              : []),
          ]),
        );
      }
      const d = report.divergence;
      if (d) {
        const more = report.divergences > 1 ? ` (${report.divergences - 1} more: --json)` : "";
        throw new StateSyncError(
          d.code as StateSyncError["code"],
          d.revision === 0 ? `${d.problem}${more}` : `revision ${d.revision}: ${d.problem}${more}`,
        );
      }
    }),
  );
}
