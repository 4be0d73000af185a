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
            // What the engine reports while compacting (a truncation it declined, and why).
            const reported: StateSyncError[] = [];
            let compacting = false;
            const revision = await withReplica(
              log,
              model,
              async (replica) => {
                if (!replica)
                  throw new StateSyncError("VALIDATION", "the log is empty: nothing to compact");
                compacting = true;
                return (await replica.compact()).revision;
              },
              (e) => void (compacting && reported.push(e)),
            );
            const after = await log.info();
            // A log that already ends with a snapshot entry of its state gets none (the engine
            // writes nothing then): said so, not "compacted" (a fresh-eyes trial). The engine
            // still removes the entries before it: a purge that a killed server undid in part
            // left some (stop 36), and this used to read "already compacted … nothing written".
            const written = revision > latestRevision;
            const purged = after.firstRevision > before;
            // Entries kept before the snapshot entry: the engine said why (`Compactor`).
            const declined = reported.find((e) => e.details.truncation === "declined");
            if (!purged && declined) throw declined;
            return {
              revision,
              firstRevision: after.firstRevision,
              removedFrom: before,
              written,
              purged,
            };
          },
          { write: true },
        ),
      );
      if (o.json) printJson(result);
      else printLines([summary(result)]);
    }),
  );
}

/** The line `compact` prints. */
function summary(r: {
  revision: number;
  firstRevision: number;
  removedFrom: number;
  written: boolean;
  purged: boolean;
}): string {
  const now = `the log now starts at revision ${r.firstRevision} (was ${r.removedFrom})`;
  if (r.written) return `compacted: snapshot entry at revision ${r.revision}; ${now}`;
  if (r.purged) {
    return `compacted: the log already ended with a snapshot entry of the current state (revision ${r.revision}), so none was written; the entries before it were removed: ${now}`;
  }
  return `already compacted: the log starts at revision ${r.firstRevision}, a snapshot entry of the current state (revision ${r.revision}); nothing written`;
}
