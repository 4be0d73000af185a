import { current, isDraft, type Patch } from "immer";
import { immer } from "../apply.js";
import { deepFreeze } from "../freeze.js";
import type { StoredPatch } from "../entry.js";
import { StateSyncError } from "../errors.js";
import { findNonJson } from "../json.js";
import type { CommandMap, Model, UpdateContext } from "../model.js";
import { StateChecker } from "./state-check.js";

/** One queued recipe (a plain recipe, or a named command's `apply` with its parsed args). */
export interface RecipeRun {
  run(draft: unknown, ctx: UpdateContext): unknown;
  readonly command?: { readonly name: string; readonly args: unknown } | undefined;
}

/** What running a batch of recipes produced. */
export interface RecipesOutcome<S, R extends RecipeRun> {
  /** The state after every recipe that succeeded, in order (frozen by Immer). */
  readonly state: S;
  readonly patches: StoredPatch[];
  readonly commands: Array<{ name: string; args: unknown }>;
  /** What each successful recipe returned (a returned draft as a plain copy). */
  readonly results: Map<R, unknown>;
  /** What each failed recipe threw (unchanged), or the `VALIDATION` error of its result. */
  readonly failures: Map<R, unknown>;
}

/**
 * Runs recipes on a state, each on what the ones before it left, with Immer's patches, and
 * checks what each produced against the model before it may be appended: a recipe that throws,
 * returns a promise, or leaves a state the schema refuses (or that is not JSON) fails alone and
 * changes nothing.
 */
export class RecipeRunner<S, C extends CommandMap<S>> {
  private readonly checker: StateChecker<S>;

  constructor(model: Model<S, C>) {
    this.checker = new StateChecker(model.state);
  }

  run<R extends RecipeRun>(ops: readonly R[], state: S, ctx: UpdateContext): RecipesOutcome<S, R> {
    let next = state;
    const patches: StoredPatch[] = [];
    const commands: Array<{ name: string; args: unknown }> = [];
    const results = new Map<R, unknown>();
    const failures = new Map<R, unknown>();
    for (const op of ops) {
      let returned = false;
      try {
        let result: unknown;
        // statesync's Immer, frozen by `deepFreeze` (only the new containers: freeze.ts).
        const [unfrozen, p] = immer.produceWithPatches(next, (draft) => {
          result = op.run(draft, ctx);
          returned = true;
          // A returned draft would be a revoked proxy once produce returns: hand back a copy.
          if (isDraft(result)) result = current(result);
          if (isThenable(result)) {
            (result as Promise<unknown>).then(undefined, () => undefined);
            throw new StateSyncError(
              "VALIDATION",
              "recipes must be synchronous (this one returned a promise)",
            );
          }
        });
        const produced = deepFreeze(unfrozen);
        if (p.length > 0) this.check(next, produced as S, p);
        next = produced as S;
        for (const patch of p) patches.push(patch as StoredPatch);
        if (op.command) commands.push(op.command);
        results.set(op, result);
      } catch (e) {
        // What the recipe threw reaches the caller unchanged (a command's domain error, say),
        // where the same command appended unconditionally is reported as COMMAND_FAILED. What
        // Immer threw after the recipe returned (a result nested so deep that freezing it
        // overflows the stack) is a VALIDATION error of the update.
        failures.set(op, returned && !(e instanceof StateSyncError) ? unusableResult(e) : e);
      }
    }
    return { state: next, patches, commands, results, failures };
  }

  /**
   * Checks the state a recipe produced against the model's schema (along the patched paths where
   * the schema allows it; see `StateChecker`), and that it is still JSON: the state before was,
   * so only the values its patches put in need looking at.
   */
  private check(before: S, after: S, patches: readonly Patch[]): void {
    this.checker.check(before, after, patches);
    for (const patch of patches) {
      if (patch.op === "remove") continue;
      const problem = findNonJson(patch.value);
      if (problem !== undefined) {
        const at = patch.path.map((k) => (typeof k === "number" ? `[${k}]` : `.${k}`)).join("");
        throw new StateSyncError(
          "VALIDATION",
          `the update would put a non-JSON value in the state (${problem.replace(/^\$/, `$${at}`)})`,
        );
      }
    }
  }
}

function unusableResult(cause: unknown): StateSyncError {
  return new StateSyncError(
    "VALIDATION",
    `the update's result cannot be kept (${String(cause)}); is it nested too deep? nothing was appended`,
    { cause },
  );
}

function isThenable(v: unknown): boolean {
  return (
    v !== null && typeof v === "object" && typeof (v as { then?: unknown }).then === "function"
  );
}
