import { deepFreeze } from "./freeze.js";
import { StateSyncError } from "./errors.js";
import { findNonJson } from "./json.js";
import type {
  ChunkedSnapshotEntry,
  CommandEntry,
  GenesisEntry,
  SnapshotEntry,
  SwitchEntry,
} from "./entry.js";
import type { Model } from "./model.js";
import { safeParse, schemaIssues } from "./schema-parse.js";

/**
 * Model versions (docs/versions.md): a model and its chain of predecessors, and the migration of
 * a state from an older version of the chain up to a newer one.
 */

/** The model of `version` in `model`'s chain of predecessors (itself included), if there is one. */
export function modelOfVersion(
  model: Model<any, any>,
  version: number,
): Model<any, any> | undefined {
  for (let m: Model<any, any> | undefined = model; m !== undefined; m = m.predecessor) {
    if (m.version === version) return m;
    if (m.version < version) return undefined;
  }
  return undefined;
}

/** The versions `model` can read, newest first (itself, then its predecessors). */
export function readableVersions(model: Model<any, any>): number[] {
  const versions: number[] = [];
  for (let m: Model<any, any> | undefined = model; m !== undefined; m = m.predecessor) {
    versions.push(m.version);
  }
  return versions;
}

/**
 * Migrates `state`, a state of `from` (a model in `to`'s chain), up to `to`, one version at a time
 * through each version's `migrate`. Each result is checked against that version's schema and for
 * JSON, and deeply frozen. Deterministic when every `migrate` is.
 *
 * Throws `VALIDATION` naming the version whose `migrate` threw or returned a state its schema
 * refuses; `MODEL_MISMATCH` when `from` is not in `to`'s chain.
 */
export function migrateUp<S>(to: Model<S, any>, from: Model<any, any>, state: unknown): S {
  const steps: Model<any, any>[] = [];
  let m: Model<any, any> | undefined = to;
  for (; m !== undefined && m !== from && m.version > from.version; m = m.predecessor)
    steps.push(m);
  if (m !== from) {
    throw new StateSyncError(
      "MODEL_MISMATCH",
      `model ${to.name} v${to.version} has no predecessor v${from.version} to migrate from`,
    );
  }
  let current = state;
  for (const step of steps.reverse()) {
    let next: unknown;
    try {
      next = step.migrate!(current);
    } catch (cause) {
      throw new StateSyncError(
        "VALIDATION",
        `migrating to ${step.name} v${step.version} failed: ${String(cause)}`,
        { cause, details: { version: step.version } },
      );
    }
    const problem = findNonJson(next);
    const parsed = problem === undefined ? safeParse(step.state, next) : undefined;
    if (!parsed?.success) {
      const why = problem ?? schemaIssues(parsed!.error);
      throw new StateSyncError(
        "VALIDATION",
        `migrating to ${step.name} v${step.version} gave a state that fails its schema: ${why}`,
        { details: { version: step.version } },
      );
    }
    // A copy in JSON terms: what a switch entry carries, and what every replica then holds.
    current = deepFreeze(JSON.parse(JSON.stringify(next)) as unknown);
  }
  return current as S;
}

/**
 * The model of the version a genesis, snapshot or switch entry puts the log at, from `model`'s
 * chain; or why this
 * replica cannot read on: `MODEL_UPGRADED` for a newer version (details: `needed`),
 * `MODEL_MISMATCH` for another model, another initial state, or an older version this model
 * has no predecessor for.
 */
export function logModelOf(
  model: Model<any, any>,
  entry: GenesisEntry | SnapshotEntry | ChunkedSnapshotEntry | SwitchEntry,
): Model<any, any> | StateSyncError {
  const mismatch = (why: string) => new StateSyncError("MODEL_MISMATCH", why);
  if (entry.model !== model.name) {
    return mismatch(`the log belongs to model "${entry.model}", not "${model.name}"`);
  }
  if (entry.version > model.version) {
    // A genesis of a newer version is a log created by it (a stream deleted and created again
    // says so: a trial read "switched" for a log that never held this version).
    const how = entry.kind === "genesis" ? "was created by" : "switched to";
    return new StateSyncError(
      "MODEL_UPGRADED",
      `the log ${how} ${entry.model} v${entry.version}; this client runs v${model.version}: upgrade it`,
      { details: { needed: entry.version, version: model.version } },
    );
  }
  const found = modelOfVersion(model, entry.version);
  if (found === undefined) {
    return mismatch(
      `the log is at ${entry.model} v${entry.version}, which v${model.version} cannot read: declare its predecessor and a migrate function`,
    );
  }
  if (entry.initialHash !== found.initialHash) {
    return mismatch(
      `the log was created by ${entry.model} v${entry.version} with another initial state`,
    );
  }
  return found;
}

/** The model version that wrote a command: `mv`, or else the version before the log's last switch
 * (`switchedFrom`, carried by switch and snapshot entries and local snapshots), or else the log's. */
export function writerVersion(
  entry: CommandEntry,
  logModel: Model<any, any>,
  switchedFrom: number | undefined,
): number {
  return entry.mv ?? switchedFrom ?? logModel.version;
}

/**
 * A command entry as the log's version applies it: itself; the log version's
 * `upgradeCommand` of a command an older version wrote after the switch; or the reason every
 * replica skips it (`OUTDATED_COMMAND`).
 */
export function commandForLog(
  logModel: Model<any, any>,
  switchedFrom: number | undefined,
  entry: CommandEntry,
): CommandEntry | StateSyncError {
  const written = writerVersion(entry, logModel, switchedFrom);
  const version = logModel.version;
  if (written === version) return entry;
  const skip = (why: string) =>
    new StateSyncError(
      "OUTDATED_COMMAND",
      `command "${entry.name}" was written by model version ${written} on a log at version ${version}; ${why}`,
      { details: { command: entry.name, writtenBy: written, logVersion: version } },
    );
  const upgrade = logModel.upgradeCommand;
  if (written > version || upgrade === undefined) return skip("skipped");
  // User code: whatever it does (throws, returns a command this version does not have), every
  // replica of this version skips the entry alike; none stops (found by a fresh-eyes trial).
  let upgraded: unknown;
  try {
    upgraded = upgrade({ name: entry.name, args: entry.args }, written);
  } catch (cause) {
    return skip(`upgradeCommand threw (${String(cause)}); skipped`);
  }
  if (upgraded === undefined) return skip("skipped");
  const name = (upgraded as { name?: unknown } | null)?.name;
  if (typeof name !== "string" || !Object.hasOwn(logModel.commands, name)) {
    return skip(`upgradeCommand returned no command of version ${version}; skipped`);
  }
  return { ...entry, name, args: (upgraded as { args?: unknown }).args };
}
