import { freeze } from "immer";
import { z } from "zod/v4";
import { StateSyncError } from "./errors.js";
import { findNonJson } from "./json.js";
import type { Model } from "./model.js";

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
    const parsed = problem === undefined ? step.state.safeParse(next) : undefined;
    if (!parsed?.success) {
      const why = problem ?? z.prettifyError(parsed!.error);
      throw new StateSyncError(
        "VALIDATION",
        `migrating to ${step.name} v${step.version} gave a state that fails its schema: ${why}`,
        { details: { version: step.version } },
      );
    }
    // A copy in JSON terms: what a switch entry carries, and what every replica then holds.
    current = freeze(JSON.parse(JSON.stringify(next)) as unknown, true);
  }
  return current as S;
}
