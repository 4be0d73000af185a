/**
 * `statesync verify --model PATH`: replays the retained log with the engine and checks that
 * every entry applies (none is skipped as malformed, no command fails unless `--allow-refused`
 * lets commands that refused pass, the replay does not stop)
 * and that every snapshot entry after the first retained one holds the state the replay reaches
 * at its base (both at the model's version: an older entry's state migrated up), and every
 * switch entry the state the model's migrate makes of it; finally that
 * the replayed state passes the model's schema. Exit 0 when all hold;
 * otherwise exit 1 with where the replay stops (it stops every replica there), or else the first
 * problem by revision: its revision, its code and what differs; the `result` says which kind
 * ({@link VerifyResult}: skipped entries are not a divergence, every replica skips them alike).
 */
import type { Command } from "commander";
import { isStateSyncError, safeParse, StateSyncError, type JetStreamLog } from "@statesync/node";
import { z } from "zod";
import { action } from "../action.js";
import { loadModel, type AnyModel } from "../model-file.js";
import { addCommonOptions, parseCommon, parseWith } from "../options.js";
import { block, printJson, printLines } from "../output.js";
import { withReplica, type AnyReplica } from "../replica.js";
import { withLog, withSession } from "../session.js";
import { invalidSince } from "../invalid-since.js";
import {
  checkStartingPoints,
  NOT_A_DIVERGENCE,
  type Divergence,
} from "../verify-starting-points.js";
import { MODEL_OPTION } from "./state.js";
import { notCheckedText, refusedText, replayedText, resultText } from "../verify-text.js";
import { watchReads } from "../read-watch.js";

export type { Divergence };

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
  /** First retained revision when verify started. */
  firstRevision: number;
  /**
   * The revision the replay started at: `firstRevision`, or a later one when the replica skipped
   * ahead (its first retained entries read past to a starting point after them, or the history
   * before a compaction's snapshot entry truncated before the replica read the log). `revision`
   * is the last one replayed; nothing was when it is below this one.
   */
  replayedFrom: number;
  /** Snapshot entries compared with the replay. */
  snapshotsChecked: number;
  /** Switch entries compared with the model's migration of the replay. */
  switchesChecked: number;
  /**
   * Snapshot and switch entries not compared: the history at their base (retained when verify
   * started) was removed while it ran, by a compaction or a purge. No problem of the log.
   */
  notChecked: number;
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
  /**
   * How many entries every replica skips or makes a no-op of whole (the `skips` result counts
   * them; a `commands` entry every command of which failed is one).
   */
  skipped: number;
  /**
   * How many `commands` entries every replica applies in part: some of their commands are
   * no-ops, the others applied (the `skips` result counts them apart; before, as skipped whole).
   */
  partly: number;
  /**
   * Commands every replica refused alike (`COMMAND_FAILED`: the command's recipe threw, or the
   * state a checked command made fails the schema; each command of a `commands` entry counts),
   * counted whether or not they were allowed. Without `--allow-refused` each is a problem (its
   * entry counts among `skipped`); with it, none is: an app whose commands refuse by throwing
   * (an unconditional command that finds the seat taken) writes them as it should.
   */
  refused: number;
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
  allowRefused: z.boolean().optional(),
});

/** What {@link verifyLog} lets pass. */
export interface VerifyOptions {
  /** Commands every replica refused alike (`COMMAND_FAILED`) are no problem (see `refused`). */
  allowRefused?: boolean;
}

function revisionOf(e: StateSyncError, fallback: number): number {
  const r = e.details.revision;
  return typeof r === "number" ? r : fallback;
}

/** Replays and checks the log (see the module header). */
export async function verifyLog(
  log: JetStreamLog,
  open: OpenReplica,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  const info = await log.info();
  const found: Divergence[] = [];
  const report: VerifyReport = {
    ok: true,
    result: "ok",
    revision: info.latestRevision,
    stoppedAt: null,
    firstRevision: info.firstRevision,
    replayedFrom: info.firstRevision,
    snapshotsChecked: 0,
    switchesChecked: 0,
    notChecked: 0,
    divergence: null,
    divergences: 0,
    problems: [],
    skipped: 0,
    partly: 0,
    refused: 0,
    invalidState: null,
    invalidSince: null,
  };
  // The entries the engine reported skipping or making a no-op of (every replica alike).
  const skipped = new Set<Divergence>();
  // A shared stream's key that started again from a genesis entry (every replica alike; before,
  // counted among the skips: a trial, stop 36).
  const restarts = new Set<Divergence>();
  let invalid: Divergence | undefined;
  // Of each `commands` entry with failures: how many of its commands failed, of how many.
  const inPart = new Map<number, { failed: number; of: number }>();
  const onError = (e: StateSyncError) => {
    // The stream's configuration (a warning such as deny_delete off) is no divergence of the log,
    // nor a sequence the server used up, which holds no entry (docs/servers.md).
    if (e.code === "STREAM_CONFIG" || e.code === "SKIPPED_SEQUENCE") return;
    const revision = revisionOf(e, 0);
    const of = e.details.commands;
    if (typeof of === "number") {
      const counted = inPart.get(revision) ?? { failed: 0, of };
      counted.failed += 1;
      inPart.set(revision, counted);
    }
    if (e.code === "COMMAND_FAILED") {
      report.refused += 1;
      if (options.allowRefused) return;
    }
    // One line, naming the revision once (zod breaks its text before the path); a command of a
    // `commands` entry keeps its place, "(command 2 of 3)".
    const problem = e.message
      .replace(` (entry at revision ${revision})`, "")
      .replace(` in the entry at revision ${revision})`, ")")
      .replace(/\s*\n\s*/g, " ");
    const skip = { revision, code: e.code, problem };
    (e.details.restartedAt === undefined ? skipped : restarts).add(skip);
    found.push(skip);
  };
  // Where the replica's read began (the log's first retained revision may have moved since
  // `info`): the replay starts there or at the first starting point after it.
  const watch = watchReads(log);
  const readFrom = () => watch.first() ?? info.firstRevision;
  try {
    await open(
      watch.log,
      async (replica, model) => {
        watch.stop();
        if (!replica) return;
        report.revision = replica.revision;
        report.replayedFrom = readFrom();
        const checked = await checkStartingPoints(log, info, replica, model, found, readFrom());
        report.replayedFrom = checked.start;
        report.snapshotsChecked = checked.snapshots;
        report.switchesChecked = checked.switches;
        report.notChecked = checked.notChecked;
        const valid = safeParse(model.state, replica.state); // a refinement that throws fails it
        if (!valid.success) {
          const issue = valid.error.issues[0];
          // Which entry put it there (a trial: only the last revision was named).
          const since = await invalidSince(
            (r) => replica.stateAt(r),
            (state) => safeParse(model.state, state).success,
            report.replayedFrom,
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
      },
      onError,
    );
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
    report.replayedFrom = Math.max(readFrom(), report.replayedFrom);
  }
  found.sort((a, b) => a.revision - b.revision);
  report.ok = found.length === 0;
  report.divergences = found.length;
  report.problems = found.slice(0, MAX_PROBLEMS);
  const skips = [...skipped].filter((f) => f.revision !== report.stoppedAt); // not the stop itself
  const partly = (r: number) => {
    const counted = inPart.get(r);
    return counted !== undefined && counted.failed < counted.of;
  };
  const revisions = new Set(skips.map((f) => f.revision));
  report.partly = [...revisions].filter(partly).length;
  report.skipped = revisions.size - report.partly;
  report.invalidState = invalid?.problem ?? null;
  const other = found.filter((f) => !skipped.has(f) && !restarts.has(f) && f !== invalid);
  report.result =
    report.stoppedAt !== null
      ? "stops"
      : other.length > 0
        ? "diverges"
        : restarts.size > 0
          ? "restarts"
          : revisions.size > 0
            ? "skips"
            : invalid
              ? "invalid-state"
              : "ok";
  // The first problem of the worst kind found, which the result names (a trial: a log that
  // diverged named an earlier refused command on stderr, and a script read COMMAND_FAILED).
  const worst: Record<VerifyResult, (f: Divergence) => boolean> = {
    stops: (f) => f.revision === report.stoppedAt,
    diverges: (f) => other.includes(f),
    restarts: (f) => restarts.has(f),
    skips: (f) => skipped.has(f),
    "invalid-state": (f) => f === invalid,
    ok: () => false,
  };
  report.divergence = found.find(worst[report.result]) ?? found[0] ?? null;
  return report;
}

/**
 * Opens the replica for {@link verifyLog} on `log` (the log verify watches: where the replica's
 * read begins is where the replay starts) and hands it over with its model.
 */
type OpenReplica = (
  log: JetStreamLog,
  use: (replica: AnyReplica | undefined, model: AnyModel) => Promise<void>,
  onError: (e: StateSyncError) => void,
) => Promise<void>;

/** Adds `verify` to `program`. */
export function registerVerify(program: Command): void {
  addCommonOptions(
    program
      .command("verify")
      .description(
        "replay the retained log; check every entry applies and every snapshot entry matches it",
      )
      .option(...MODEL_OPTION)
      .option(
        "--allow-refused",
        "commands every replica refused alike (COMMAND_FAILED: the recipe threw, or the state it made fails the schema) are no problem",
      ),
  ).action(
    action(async (raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const args = parseWith(verifySchema, { model: raw.model, allowRefused: raw.allowRefused });
      const model = await loadModel(args.model);
      const report = await withSession(o, (s) =>
        withLog(s, (log) =>
          verifyLog(
            log,
            (watched, use, onError) =>
              withReplica(watched, model, (replica) => use(replica, model), onError),
            { allowRefused: args.allowRefused === true },
          ),
        ),
      );
      if (o.json) printJson(report);
      else {
        printLines(
          block([
            ["result", resultText(report)],
            ["replayed", replayedText(report, o.key)],
            ...(report.invalidState !== null
              ? [["state", report.invalidState] as [string, string]]
              : []),
            ...(report.refused > 0
              ? [
                  ["refused commands", refusedText(report, args.allowRefused === true)] as [
                    string,
                    string,
                  ],
                ]
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
            ...(report.notChecked > 0 ? [["not checked", notCheckedText(report)] as const] : []),
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
