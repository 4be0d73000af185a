/**
 * `statesync state --model PATH [--at N]`: the state at the latest revision (or at a retained
 * one), as JSON, computed by the engine: a replica caught up with the log, and its `stateAt`.
 * Prints the state pretty-printed; `--json`: `{ revision, state }` on one line.
 */
import type { Command } from "commander";
import {
  isStateSyncError,
  nestedDeeperThan,
  rebuildStateAt,
  safeParse,
  StateSyncError,
  type JetStreamLog,
} from "@statesync/node";
import { z } from "zod";
import { action } from "../action.js";
import { loadModel, type AnyModel } from "../model-file.js";
import { addCommonOptions, parseCommon, parseWith, revisionSchema } from "../options.js";
import { jsonText } from "../json-text.js";
import { printJson, printLines, printNotice } from "../output.js";
import { checkFirstEntry, withReplica } from "../replica.js";
import { withLog, withSession, type Session } from "../session.js";

const stateSchema = z.object({
  model: z.string({ error: "PATH is required (a .js/.mjs module exporting the model)" }),
  at: revisionSchema.optional(),
});

/** Deepest state printed indented (deeper ones: one line, see `registerState`). */
const PRETTY_UP_TO = 1_000;

/** The option every model command takes. */
export const MODEL_OPTION = [
  "--model <path>",
  "ES module (.js/.mjs) whose default export, or PATH#name, is the model",
] as const;

/**
 * The state at `at` (default the latest) and its revision, from a replica of `model`. An empty
 * log is at revision 0 with the initial state. Throws `TRUNCATED` for a revision before the
 * retained history, `VALIDATION` for one past the latest, and what replaying throws.
 */
export async function readState(
  s: Session,
  model: AnyModel,
  at: number | undefined,
): Promise<{ revision: number; state: unknown }> {
  return withLog(s, (log) => readStateOf(log, model, at));
}

/** {@link readState} on an open log. */
export async function readStateOf(
  log: JetStreamLog,
  model: AnyModel,
  at: number | undefined,
): Promise<{ revision: number; state: unknown }> {
  // A revision: replayed up to it only, so what lies after it (an entry this model cannot read,
  // a switch to a newer version) does not stand in the way (found by a fresh-eyes trial).
  if (at === 0) return { revision: 0, state: model.initial };
  if (at !== undefined) return { revision: at, state: await stateAtRetained(log, model, at) };
  return withReplica(log, model, async (replica) => {
    if (replica === undefined) return { revision: 0, state: model.initial };
    return { revision: replica.revision, state: replica.state };
  });
}

/**
 * The state at revision `at` (above 0) of `log`, replayed up to it: `readState`'s `--at`. A
 * revision retained when the read started that a compaction or purge removed before the replay
 * got there is `TRUNCATED` saying so: the log lacks nothing, the command came too late (before, it
 * read as a revision before the retained history, as if `--at` had named one).
 */
export async function stateAtRetained(
  log: JetStreamLog,
  model: AnyModel,
  at: number,
): Promise<unknown> {
  const info = await log.info();
  if (at > info.latestRevision) {
    throw new StateSyncError(
      "VALIDATION",
      `--at ${at} is past the latest revision (${info.latestRevision})`,
    );
  }
  if (info.firstRevision > 0 && info.firstRevision <= at) await checkFirstEntry(log, info);
  try {
    return await rebuildStateAt(log, model, at);
  } catch (err) {
    const now = isStateSyncError(err) && err.code === "TRUNCATED" ? err.details.firstRevision : 0;
    if (info.firstRevision === 0 || at < info.firstRevision || !(Number(now) > at)) throw err;
    throw new StateSyncError(
      "TRUNCATED",
      `revision ${at} was removed while the command ran (a compaction or a purge; the first retained revision is now ${String(now)}): its state is no longer in the log; run the command again with a retained revision`,
      { details: { revision: at, firstRevision: now }, cause: err },
    );
  }
}

/** Why `state` fails `model`'s schema (the first issue and where), or undefined when it passes. */
export function schemaProblem(model: AnyModel, state: unknown): string | undefined {
  const valid = safeParse(model.state, state); // a refinement that throws fails it
  if (valid.success) return undefined;
  const issue = valid.error.issues[0];
  return `${issue?.message ?? "invalid"} at /${issue?.path.join("/") ?? ""}`;
}

/** Adds `state` to `program`. */
export function registerState(program: Command): void {
  addCommonOptions(
    program
      .command("state")
      .description("the state at the latest (or a retained) revision, as JSON")
      .option(...MODEL_OPTION)
      .option("--at <revision>", "a retained revision (default: the latest)"),
  ).action(
    action(async (raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const args = parseWith(stateSchema, { model: raw.model, at: raw.at });
      const model = await loadModel(args.model);
      const result = await withSession(o, (s) => readState(s, model, args.at));
      // Printed all the same (it is what every replica holds), with a notice on stderr and exit
      // 0 (a fresh-eyes trial: printed as if valid). `verify` says which entries put it there.
      const invalid = schemaProblem(model, result.state);
      if (invalid !== undefined) {
        printNotice(
          `statesync: the state at revision ${result.revision} fails the model's schema (${invalid}); every replica holds it as it is: \`statesync verify\` replays the log and says more`,
        );
      }
      if (o.json) printJson(invalid === undefined ? result : { ...result, invalid });
      // Indented, line by line, each made visible (control characters escaped as in JSON). A
      // state nested past PRETTY_UP_TO levels on one line: indenting grows with the square of
      // the depth (20,000 levels: 800 MB, past V8's longest string; a fresh-eyes trial).
      else if (nestedDeeperThan(result.state, PRETTY_UP_TO)) {
        printNotice(
          `statesync: the state nests deeper than ${PRETTY_UP_TO} levels: printed on one line, not indented`,
        );
        printLines([jsonText(result.state)]);
      } else printLines(jsonText(result.state, 2).split("\n"));
    }),
  );
}
