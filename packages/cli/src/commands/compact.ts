/**
 * `statesync compact --model PATH`: runs a compaction with the engine's `compact()` (the state
 * written into the log as a snapshot entry, conditionally, then the history before it removed)
 * and prints the snapshot entry's revision.
 */
import type { Command } from "commander";
import { StateSyncError } from "@statesync/node";
import { z } from "zod";
import { action } from "../action.js";
import { loadModel } from "../model-file.js";
import { addCommonOptions, parseCommon, parseWith } from "../options.js";
import { printJson, printLines } from "../output.js";
import { withReplica } from "../replica.js";
import { withLog, withSession } from "../session.js";
import { MODEL_OPTION } from "./state.js";

const compactSchema = z.object({
  model: z.string({ error: "PATH is required (a .js/.mjs module exporting the model)" }),
});

/** Adds `compact` to `program`. */
export function registerCompact(program: Command): void {
  addCommonOptions(
    program
      .command("compact")
      .description("write the state as a snapshot entry and remove the history before it")
      .option(...MODEL_OPTION),
  ).action(
    action(async (raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const args = parseWith(compactSchema, { model: raw.model });
      const model = await loadModel(args.model);
      const result = await withSession(o, (s) =>
        withLog(
          s,
          async (log) => {
            const { firstRevision: before, latestRevision } = await log.info();
            const revision = await withReplica(log, model, async (replica) => {
              if (!replica)
                throw new StateSyncError("VALIDATION", "the log is empty: nothing to compact");
              return (await replica.compact()).revision;
            });
            const after = await log.info();
            // A log that already starts with a snapshot entry of its state gets none (the
            // engine writes nothing then): said so, not "compacted" (a fresh-eyes trial).
            const written = revision > latestRevision;
            return { revision, firstRevision: after.firstRevision, removedFrom: before, written };
          },
          { write: true },
        ),
      );
      if (o.json) printJson(result);
      else {
        printLines([
          result.written
            ? `compacted: snapshot entry at revision ${result.revision}; the log now starts at revision ${result.firstRevision} (was ${result.removedFrom})`
            : `already compacted: the log starts at revision ${result.firstRevision}, a snapshot entry of the current state (revision ${result.revision}); nothing written`,
        ]);
      }
    }),
  );
}
