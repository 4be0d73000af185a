import type { z } from "zod/v4";
import type { StoredPatch } from "./entry.js";
import { StateSyncError } from "./errors.js";
import { StateChecker } from "./engine/state-check.js";
import type { Touch } from "./engine/touch-recorder.js";
import { withValues } from "./engine/touch-values.js";
import { MAX_STATE_DEPTH } from "./entry-limits.js";
import { findJsonProblem, pathText, type JsonProblem } from "./json.js";
import type { Model } from "./model.js";
import { safeParse, schemaIssues } from "./schema-parse.js";

/**
 * Paths changed since the state was last known valid, at most this many; past it, the next
 * checked command checks the whole state (once: then it is known valid again).
 */
const MAX_DIRTY = 256;

/** True when no write replaces the whole state (a path of length 0). */
function allAtKeys(writes: readonly Touch[]): boolean {
  for (let i = 0; i < writes.length; i++) if (writes[i]!.path.length === 0) return false;
  return true;
}

const checkers = new WeakMap<Model<any, any>, StateChecker<unknown>>();

function checkerOf(model: Model<any, any>): StateChecker<unknown> {
  let checker = checkers.get(model);
  if (!checker) checkers.set(model, (checker = new StateChecker(model.state)));
  return checker;
}

/**
 * The check of a checked command's result (a `command` entry of format 3, docs/format.md), and
 * what a replay knows about the validity of its state to make it cheap.
 *
 * The verdict is a function of the state after the command alone: the command is kept when that
 * state passes the model's schema and is JSON, and is a no-op otherwise. So every replica reaches
 * the same verdict whatever it knew before, however its entries were batched. What the replay
 * knows only decides how much is looked at: when the state before is known valid, the check
 * looks along the places that changed since (the command's writes, and the paths of the updates
 * and commands before it since the state was last known valid) where the schema allows it
 * (`StateChecker`, as a writer checks a conditional update); otherwise the whole state is
 * checked, after which it is known valid again.
 *
 * Known valid: after a snapshot or switch entry (checked where it is applied), a chunked
 * snapshot loaded from its parts, and a checked command that passed. Unknown: at a genesis entry
 * or a restored local snapshot (one whole check settles it), after a command applied unchecked
 * (formats 1 and 2) or an update replacing the root, and past {@link MAX_DIRTY} changed paths.
 */
export class StateValidity {
  private known = false;
  /** Where the state may have changed since it was known valid (never beyond `MAX_DIRTY`). */
  private dirty: Touch[] = [];

  /** A copy, for a batch that may be dropped (`assign` keeps its outcome). */
  fork(): StateValidity {
    const v = new StateValidity();
    v.known = this.known;
    v.dirty = this.dirty.slice();
    return v;
  }

  /** Takes over what `other` (a fork of this) knows. */
  assign(other: StateValidity): void {
    this.known = other.known;
    this.dirty = other.dirty;
  }

  /** The state was just checked whole (`true`), or nothing is known of it (`false`). */
  reset(known: boolean): void {
    this.known = known;
    this.dirty = [];
  }

  /** A command was applied unchecked: its writes are unknown. */
  unknown(): void {
    this.reset(false);
  }

  /**
   * An update's patches were applied (unchecked, as every replica applies them). A path is noted
   * up to its first array index: the array itself is checked, since an insertion or removal
   * moves its members to places no later path names.
   */
  notePatches(patches: readonly StoredPatch[]): void {
    if (!this.known) return;
    for (const p of patches) {
      const at = p.path.findIndex((k) => typeof k === "number");
      const path = at < 0 ? p.path : p.path.slice(0, at);
      if (path.length === 0) return this.reset(false);
      this.dirty.push({ op: at < 0 && p.op === "remove" ? "remove" : "replace", path });
    }
    if (this.dirty.length > MAX_DIRTY) this.reset(false);
  }

  /**
   * Why `after`, the state a checked command produced, fails `model` (undefined: it passes, and
   * is known valid from here). `writes`: every place the command changed (the touches a
   * `TouchRecorder` noted), or undefined when they are not known (then the whole state is
   * checked). `after` may be a draft.
   */
  verdict(
    model: Model<any, any>,
    after: unknown,
    writes: readonly Touch[] | undefined,
  ): string | undefined {
    if (this.known && writes !== undefined) {
      if (writes.length === 0 && this.dirty.length === 0) return undefined;
      const all = this.dirty.length === 0 ? writes : [...this.dirty, ...writes];
      if (allAtKeys(all)) {
        const valued = withValues(after, all);
        // Before the schema: a recursive schema recurses as deep as the value, past the stack.
        for (const w of valued) {
          if (w.op === "remove") continue;
          const room = MAX_STATE_DEPTH - w.path.length;
          const problem = room < 0 ? ROOMLESS : findJsonProblem(w.value, room);
          if (problem !== undefined) return reasonOf(problem, `$${pathText(w.path)}`);
        }
        try {
          checkerOf(model).check(after, after, valued);
        } catch (e) {
          // A write that looked invalid made the checker parse the whole state: its issues are
          // the reason (before, the whole state was parsed again for them: twice the cost of a
          // refused command on a large state, every replica).
          const issues = (e instanceof StateSyncError ? e.cause : undefined) as z.ZodError;
          if (Array.isArray(issues?.issues)) return schemaIssues(issues); // (any zod copy's)
          return this.whole(model, after); // the reason, from the whole state
        }
        this.dirty = [];
        return undefined;
      }
    }
    return this.whole(model, after);
  }

  private whole(model: Model<any, any>, after: unknown): string | undefined {
    const problem = findJsonProblem(after, MAX_STATE_DEPTH);
    if (problem?.tooDeep) return reasonOf(problem, "$");
    const parsed = safeParse(model.state, after); // a refinement that throws fails it
    if (!parsed.success) return schemaIssues(parsed.error);
    if (problem !== undefined) return reasonOf(problem, "$");
    this.reset(true);
    return undefined;
  }
}

/** A written value under a path longer than a state may nest: no room even for a number. */
const ROOMLESS: JsonProblem = { path: "$", tooDeep: true, message: "" };

/** Why a state with `problem` at `at` + `problem.path` (past its `$`) fails. */
function reasonOf(problem: JsonProblem, at: string): string {
  const where = `${at}${problem.path.slice(1)}`;
  return problem.tooDeep
    ? `it nests arrays and objects deeper than ${MAX_STATE_DEPTH} levels (at ${where}), the most a state may (docs/format.md, "Limits")`
    : `it is not JSON (${where}: ${problem.message})`;
}
