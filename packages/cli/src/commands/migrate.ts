/**
 * `statesync migrate --model PATH [--dry-run]`: switches the log to the model's version
 * (docs/versions.md) with the engine's `upgrade()`: a switch entry carrying the state migrated
 * through the model's `migrate` functions, appended conditionally, so it is written once however
 * many replicas or operators do this together. `--dry-run` writes nothing and prints what the
 * switch would carry, after every check the switch runs before it writes (the engine's
 * `upgrade({ dryRun: true })`: a switch the real run refuses is refused, exit 1). Exit 0 also when the log is already at the model's version (nothing to do).
 */
import type { Command } from "commander";
import { isStateSyncError, StateSyncError, type JetStreamLog } from "@statesync/node";
import { z } from "zod";
import { action } from "../action.js";
import { readLogVersion } from "../log-version.js";
import { loadModel, type AnyModel } from "../model-file.js";
import { addCommonOptions, parseCommon, parseWith } from "../options.js";
import { block, printJson, printLines, shortJson } from "../output.js";
import { withReplica } from "../replica.js";
import { withLog, withSession } from "../session.js";
import { MODEL_OPTION } from "./state.js";

const migrateSchema = z.object({
  model: z.string({ error: "PATH is required (a .js/.mjs module exporting the new model)" }),
  dryRun: z.boolean().default(false),
});

/** What `migrate` did, or would do with `--dry-run`. */
interface MigrateResult {
  readonly model: string;
  /** The version the log was at before, and the model's. */
  readonly from: number;
  readonly to: number;
  /** "switched", "would-switch" (dry run) or "up-to-date". */
  readonly outcome: "switched" | "would-switch" | "up-to-date";
  /** Revision of the switch entry, or the revision the dry run read. */
  readonly revision: number;
  /** The migrated state the switch entry carries (or would). */
  readonly state: unknown;
}

/** Adds `migrate` to `program`. */
export function registerMigrate(program: Command): void {
  addCommonOptions(
    program
      .command("migrate")
      .description("switch the log to the model's version (a switch entry with the migrated state)")
      .option(...MODEL_OPTION)
      .option("--dry-run", "write nothing; show what the switch entry would carry"),
  ).action(
    action(async (raw: Record<string, unknown>) => {
      const o = parseCommon(raw);
      const args = parseWith(migrateSchema, { model: raw.model, dryRun: raw.dryRun });
      const model = await loadModel(args.model);
      const result = await withSession(o, (s) =>
        withLog(
          s,
          (log) =>
            withReplica(log, model, async (replica): Promise<MigrateResult> => {
              if (!replica) {
                throw new StateSyncError("VALIDATION", "the log is empty: nothing to migrate");
              }
              const common = { model: model.name, to: model.version };
              if (!replica.upgradePending) {
                const base = { ...common, from: model.version, revision: replica.revision };
                return { ...base, outcome: "up-to-date", state: replica.state };
              }
              const logVersion = (await readLogVersion(log))?.version ?? 0;
              if (args.dryRun) {
                // Every check of the switch, nothing written: a refusal is the real run's.
                const { revision } = await replica.upgrade({ dryRun: true });
                return {
                  ...common,
                  from: logVersion,
                  outcome: "would-switch",
                  revision,
                  state: replica.state,
                };
              }
              const { revision } = await replica.upgrade();
              return {
                ...common,
                from: logVersion,
                outcome: "switched",
                revision,
                state: replica.state,
              };
            }).catch((e: unknown) => refusal(e, log, model)),
          // Opened for writing in a dry run too, with the checks of a log written to (a sealed
          // stream, the stream's and the server's message size limits): the dry run refuses what
          // the switch would. It appends nothing: `upgrade({ dryRun: true })` never does.
          { write: true },
        ),
      );
      if (o.json) return printJson(result);
      const what =
        result.outcome === "up-to-date"
          ? `the log is already at ${result.model} v${result.to}: nothing to do`
          : result.outcome === "would-switch"
            ? `dry run: would switch ${result.model} v${result.from} → v${result.to} with an entry based on revision ${result.revision} (nothing written)`
            : `switched ${result.model} v${result.from} → v${result.to}: switch entry at revision ${result.revision}`;
      printLines([what, ...block([["state", shortJson(result.state, 200)]])]);
    }),
  );
}

/**
 * A model older than the log: `MODEL_UPGRADED` naming the version the log is at and its latest
 * revision (the replica's own refusal names only the first entry it could not read, often the
 * genesis at revision 1, whatever the log's revision). Anything else is rethrown as it is.
 */
async function refusal(e: unknown, log: JetStreamLog, model: AnyModel): Promise<never> {
  if (!isStateSyncError(e, "MODEL_UPGRADED")) throw e;
  const [info, at] = await Promise.all([log.info(), readLogVersion(log)]).catch(() => {
    throw e;
  });
  const version = at?.version ?? e.details.needed;
  const since = at ? `, since its ${at.kind} entry at revision ${at.revision}` : "";
  throw new StateSyncError(
    "MODEL_UPGRADED",
    `the log is at ${model.name} v${String(version)} (latest revision ${info.latestRevision}${since}), newer than --model v${model.version}: migrate only switches a log to a newer version`,
    { cause: e, details: { ...e.details, needed: version, latest: info.latestRevision } },
  );
}
