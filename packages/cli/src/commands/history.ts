/**
 * `statesync history [--from N] [--to N]`: the retained entries of a state, one line each:
 * revision, time, kind, client, message id, size and what the entry does (its commands and
 * arguments, or its patches). `--json` prints one JSON array of `EntryRow`s. A `--from` that
 * compaction or truncation removed lists from the first retained entry, with a warning on stderr.
 * With `--model`, the log is replayed from its first retained entry (the engine's `Replay`, see
 * verdicts.ts) and each entry the replay does not apply says so; one whose state fails to
 * migrate to `--model`'s version says whether every replica stops there or only some may.
 */
import type { Command } from "commander";
import type { JetStreamLog } from "@statesync/node";
import { z } from "zod";
import { action } from "../action.js";
import { entryRow, entryTable, type EntryRow } from "../entries.js";
import { loadModel, type AnyModel } from "../model-file.js";
import { addCommonOptions, parseCommon, entryRevisionSchema, parseWith } from "../options.js";
import { printJson, printLines, printNotice } from "../output.js";
import { removedFromWarning, warnTruncated } from "../retained.js";
import { withSameHistory } from "../same-history.js";
import { withLog, withSession } from "../session.js";
import { replayerOf, settleRows } from "../verdicts.js";
import { readWhole } from "../whole-read.js";
import { MODEL_OPTION } from "./state.js";

const rangeSchema = z
  .object({
    from: entryRevisionSchema.optional(),
    to: entryRevisionSchema.optional(),
    model: z.string().optional(),
  })
  .refine((r) => r.from === undefined || r.to === undefined || r.from <= r.to, {
    path: ["from"],
    message: "must not be after --to",
  });

/** What `history` lists: the rows, whether the log retains nothing, the `--from` warning. */
export interface HistoryRead {
  readonly rows: EntryRow[];
  /** The log retains nothing at all (a stream purged whole, or new). */
  readonly empty: boolean;
  /** Why `--from` names a revision no longer retained, or undefined. */
  readonly warning: string | undefined;
}

/** The range `history` lists and the model that marks its entries. */
export interface HistoryRange {
  readonly from?: number | undefined;
  readonly to?: number | undefined;
  readonly model?: AnyModel | undefined;
}

/**
 * The rows of `log` in `range`, read from one retained history (`withSameHistory`): a
 * compaction landing between the log's bounds and its entries removed what the read was to
 * list, and `history` said "no retained entries in that range" of a log that retained some.
 * Throws what reading throws, and `TRUNCATED` when the log is truncated during every attempt.
 */
export function readHistory(log: JetStreamLog, range: HistoryRange): Promise<HistoryRead> {
  return withSameHistory(log, () => readHistoryOnce(log, range));
}

async function readHistoryOnce(log: JetStreamLog, range: HistoryRange): Promise<HistoryRead> {
  const info = await log.info();
  const rows: EntryRow[] = [];
  const empty = info.firstRevision === 0;
  // A removed revision: said, then listed from the first retained one (as `tail`).
  const warning =
    range.from === undefined
      ? undefined
      : await removedFromWarning(log, info, Math.max(1, range.from));
  const done = (out: EntryRow[]) => ({ rows: out, empty, warning });
  if (info.firstRevision === 0) return done(rows);
  const from = Math.max(range.from ?? info.firstRevision, info.firstRevision);
  const to = Math.min(range.to ?? info.latestRevision, info.latestRevision);
  if (from > to) return done(rows);
  const model = range.model;
  if (model === undefined) {
    for await (const e of readWhole(log, from, to)) rows.push(entryRow(e));
    return done(rows);
  }
  // Replayed from the first retained entry: the verdict on an entry depends on all before.
  const at = new Map<number, number>(); // revision -> index in rows
  const replayer = await replayerOf(
    log,
    model,
    info.firstRevision,
    to,
    (e, mark) => {
      if (e.revision >= from) at.set(e.revision, rows.push(entryRow(e, mark)) - 1);
    },
    (revision, replay) => {
      const i = at.get(revision);
      if (i !== undefined) rows[i] = { ...rows[i]!, replay };
    },
  );
  // A state failing to migrate: repaired later (`may stop`) or stopping every replica.
  return done(settleRows(rows, await replayer.settle(log, to, info.latestRevision)));
}

/** Adds `history` to `program`. */
export function registerHistory(program: Command): void {
  addCommonOptions(
    program
      .command("history")
      .description("the retained entries, one line each")
      .option("--from <revision>", "first revision to list (default: the first retained)")
      .option("--to <revision>", "last revision to list (default: the latest)")
      .option(MODEL_OPTION[0], `${MODEL_OPTION[1]}: mark the entries its replay skips`),
  ).action(
    action(async (raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const range = parseWith(rangeSchema, { from: raw.from, to: raw.to, model: raw.model });
      const model = range.model === undefined ? undefined : await loadModel(range.model);
      const { rows, empty, warning } = await withSession(o, (s) =>
        withLog(s, (log) => readHistory(log, { from: range.from, to: range.to, model })),
      );
      warnTruncated(warning);
      if (o.json) printJson(rows);
      else if (empty) printNotice("the log retains no entries (a new or purged stream)");
      else if (rows.length === 0) printNotice("no retained entries in that range");
      else printLines(entryTable(rows));
    }),
  );
}
