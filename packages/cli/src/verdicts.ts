/**
 * What the engine's replay does with each entry `history` and `tail` list, when given `--model`:
 * the core's `EntryVerdicts` (the `Replay` every replica runs) fed the log from its first
 * retained entry, so a listing marks exactly the entries every replica skips, makes a no-op of
 * or stops at, with the engine's reason (before, only entries that do not decode were marked: a
 * conditional update on a stale base, a command whose arguments fail the schema printed as if
 * they applied; fresh-eyes trial). No rule of the replay is repeated here.
 *
 * A state that fails to migrate to `--model`'s version while a later entry repairs it is
 * `may-stop` (replicas that check that state alone stop there, the others go on); `history`
 * reads on past `--to` until it is settled, and marks `stops` when no entry repairs it
 * (`settleRows`), as `verify` says then.
 */
import {
  EntryVerdicts,
  type EntryVerdict,
  type JetStreamLog,
  type LogEntry,
  type ReplayStop,
} from "@statesync/node";
import type { EntryRow } from "./entries.js";
import type { AnyModel } from "./model-file.js";
import { readWhole } from "./whole-read.js";

/** What the replay did with an entry it does not simply apply (the `replay` of an `EntryRow`). */
export interface ReplayMark {
  /**
   * `skipped` (every replica skips it), `no-op` (consumed without effect), `restarts` (a shared
   * stream's key started again from it: the state is the initial state), `stops` (the replay
   * of the model stops before it), `may-stop` (its state does not migrate to the model's version
   * and a later entry repairs it: replicas that check this state alone stop before it, the
   * others go on), `not-replayed` (after the entry it stops at) or `partly` (a `commands`
   * entry some of whose commands are no-ops, the others applied; `error` lists them).
   */
  readonly verdict:
    "skipped" | "no-op" | "restarts" | "stops" | "may-stop" | "not-replayed" | "partly";
  /** Why (`CODE: message`, as the engine reports it; a `commands` entry's reasons joined by `; `). */
  readonly error: string;
  /**
   * A `commands` entry's failed commands, each with its place (from 0, as `details.index`) and
   * reason: what a script reads instead of splitting `error` (a trial).
   */
  readonly failed?: ReadonlyArray<{ readonly index: number; readonly error: string }>;
}

/** The engine's error text without the revision it appends (the row names the revision). */
function reason(error: { code: string; message: string }, revision: number): string {
  const suffix = ` (entry at revision ${revision})`;
  // A command of a `commands` entry: "(command 2 of 3 in the entry at revision 7)".
  const message = error.message.endsWith(suffix)
    ? error.message.slice(0, -suffix.length)
    : error.message.replace(` in the entry at revision ${revision})`, ")");
  // One line: zod's messages break before the path ("expected number\n  → at by"), which the
  // table printed as a literal \u000a (a trial, stop 40).
  return `${error.code}: ${message.replace(/\s*\n\s*/g, " ")}`;
}

/** The mark of `verdict` on the entry at `revision`; undefined when it applies (or is held). */
export function replayMark(verdict: EntryVerdict, revision: number): ReplayMark | undefined {
  switch (verdict.kind) {
    case "applied": {
      const failures = verdict.failures;
      if (!failures) return undefined;
      // Every command of the entry failed: consumed without effect, as a one-command entry's
      // failure is (a trial: "some commands no-op" for 2 of 2).
      const all = failures.length === failures[0]!.details.commands;
      const failed = failures.map((e) => ({
        index: Number(e.details.index),
        error: reason(e, revision),
      }));
      const error = failed.map((f) => f.error).join("; ");
      return { verdict: all ? "no-op" : "partly", error, failed };
    }
    case "skipped":
      return { verdict: "skipped", error: reason(verdict.error, revision) };
    case "no-op":
      return {
        verdict: "no-op",
        error: verdict.error
          ? reason(verdict.error, revision)
          : "a re-sent queued update already applied",
      };
    case "restarts": // a shared stream's key started again: every replica applies it
      return { verdict: "restarts", error: reason(verdict.error, revision) };
    case "held": // a chunked snapshot entry whose parts do not check out: refused, not loaded
      return verdict.error && { verdict: "skipped", error: reason(verdict.error, revision) };
    case "stops":
      return { verdict: "stops", error: reason(verdict.error, revision) };
    case "may-stop":
      return { verdict: "may-stop", error: reason(verdict.error, revision) };
    case "unreached":
      return {
        verdict: "not-replayed",
        error: `the replay stops at revision ${verdict.stoppedAt}`,
      };
    default:
      return undefined;
  }
}

/** Marks entries in log order: `mark(entry)` after {@link replayerOf} caught up. */
export type Marker = (entry: LogEntry) => ReplayMark | undefined;

/** A replay caught up to some revision (see {@link replayerOf}). */
export interface Replayer {
  /** The mark of the next entry. */
  readonly mark: Marker;
  /**
   * Where every replica stops, having read on from `after` up to `latest` while a `may-stop`
   * waited for its repair (those entries are fed to the replay, not listed): the log's verdict
   * on the entries listed, not only on the listing's last.
   */
  settle(log: JetStreamLog, after: number, latest: number): Promise<ReplayStop | undefined>;
}

/**
 * An earlier entry's mark, known later: an entry held while a chunked snapshot's parts were
 * read (listed then without a mark) that the replay skipped or made a no-op of once the
 * snapshot entry at `by` loaded. Before, such an entry stayed listed as if it applied (stop 41).
 */
export type Remark = (revision: number, mark: ReplayMark, by: number) => void;

/**
 * A replay of `model` having fed the retained entries of `log` up to `through` (`onEntry` sees
 * each of them with its mark): it marks the entries after. `remark` hears of the marks of
 * entries given before, found when a chunked snapshot entry loads (see {@link Remark}).
 */
export async function replayerOf(
  log: JetStreamLog,
  model: AnyModel,
  firstRevision: number,
  through: number,
  onEntry?: (entry: LogEntry, mark: ReplayMark | undefined) => void,
  remark?: Remark,
): Promise<Replayer> {
  const verdicts = new EntryVerdicts(model, log.contiguous);
  const mark: Marker = (entry) => {
    const verdict = verdicts.next(entry);
    if (verdict.kind === "applied" && verdict.replayed && remark) {
      for (const { revision, verdict: held } of verdict.replayed) {
        const m = replayMark(held, revision);
        if (m) remark(revision, m, entry.revision);
      }
    }
    return replayMark(verdict, entry.revision);
  };
  if (firstRevision > 0 && through >= firstRevision) {
    for await (const e of readWhole(log, firstRevision, through)) {
      const m = mark(e); // fed to the replay whether or not anyone listens
      onEntry?.(e, m);
    }
  }
  return {
    mark,
    async settle(log, after, latest) {
      if (verdicts.pending && after < latest) {
        for await (const e of readWhole(log, after + 1, latest)) {
          mark(e);
          if (!verdicts.pending) break;
        }
      }
      return verdicts.end();
    },
  };
}

/**
 * `rows` with the marks a settled stop gives them: `stops` at its revision (a `may-stop` there
 * when no later entry repaired the state), `not replayed` after it.
 */
export function settleRows(rows: readonly EntryRow[], stop: ReplayStop | undefined): EntryRow[] {
  if (stop === undefined) return [...rows];
  const at = stop.stoppedAt;
  return rows.map((row) =>
    row.revision < at || row.replay?.verdict === "not-replayed"
      ? row
      : {
          ...row,
          replay:
            row.revision === at
              ? { verdict: "stops", error: reason(stop.error, at) }
              : { verdict: "not-replayed", error: `the replay stops at revision ${at}` },
        },
  );
}
