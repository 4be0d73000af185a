import type { Patch } from "immer";
import { immer } from "../apply.js";
import { freezeAlong, freezeWalk } from "../freeze.js";
import type { StoredPatch } from "../entry.js";
import { StateSyncError } from "../errors.js";
import { MAX_PATCH_VALUE_DEPTH, MAX_STATE_DEPTH } from "../entry-limits.js";
import { findJsonProblemWithDepth, pathText } from "../json.js";
import { inRecipes, refuseThenable } from "../synchronous.js";
import type { CommandMap, Model, UpdateContext } from "../model.js";
import { detachResult } from "./recipe-result.js";
import { StateChecker } from "./state-check.js";
import { holesError as holes, TouchRecorder, type Touch } from "./touch-recorder.js";
import { freezeWritten, withValues } from "./touch-values.js";

/** One queued recipe (a plain recipe, or a named command's `apply` with its parsed args). */
export interface RecipeRun {
  run(draft: unknown, ctx: UpdateContext): unknown;
  readonly command?: { readonly name: string; readonly args: unknown } | undefined;
  /**
   * Its own context, given the batch's (a pending update's: `pendingContext`, the same in the
   * optimistic view and in every attempt); without it, it runs with the batch's.
   */
  context?(batch: UpdateContext): UpdateContext;
}

/** `op.run` on `draft` with its own context when it has one, else `ctx`. */
function runIn(op: RecipeRun, draft: unknown, ctx: UpdateContext): unknown {
  return op.run(draft, op.context ? op.context(ctx) : ctx);
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

/** A `RecipesOutcome` being built. */
interface Acc<S, R> {
  state: S;
  readonly patches: StoredPatch[];
  readonly commands: Array<{ name: string; args: unknown }>;
  readonly results: Map<R, unknown>;
  readonly failures: Map<R, unknown>;
}

/** Thrown out of a shared draft to drop it when one of its recipes failed. */
const ABORT = Symbol("abort shared draft");

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

  /**
   * Runs `ops` in order, each on the state the ones before it left. The recipes of a batch share
   * one Immer draft (so a batch on a large state copies each touched container once, not once per
   * recipe: issue 12), each checked along what it touched; when one fails there, the ones before
   * it are run again in one draft and the failing one alone, as `runOne` would, so outcomes,
   * states and patches (up to Immer's merging of patches within a draft) are those of one-by-one
   * runs.
   */
  run<R extends RecipeRun>(ops: readonly R[], state: S, ctx: UpdateContext): RecipesOutcome<S, R> {
    return inRecipes(() => this.runAll(ops, state, ctx));
  }

  private runAll<R extends RecipeRun>(
    ops: readonly R[],
    state: S,
    ctx: UpdateContext,
  ): RecipesOutcome<S, R> {
    const acc: Acc<S, R> = {
      state,
      patches: [],
      commands: [],
      results: new Map<R, unknown>(),
      failures: new Map<R, unknown>(),
    };
    if (ops.length === 1) {
      // One update (the awaited writer's usual batch): nothing to share, no recorder to pay for.
      this.runOne(ops[0]!, acc, ctx);
      return acc;
    }
    let rest = ops;
    while (rest.length > 0) {
      const tried = this.runShared(rest, acc, ctx);
      if (tried.kind === "unusable") {
        for (const op of rest) this.runOne(op, acc, ctx);
        break;
      }
      if (tried.kind === "ran") {
        rest = rest.slice(tried.count);
        continue;
      }
      // rest[tried.at] failed in the shared draft: keep what the ones before it did, then run it
      // alone for its exact outcome, and go on after it.
      let before = rest.slice(0, tried.at);
      while (before.length > 0) {
        const again = this.runShared(before, acc, ctx);
        if (again.kind !== "ran") {
          for (const op of before) this.runOne(op, acc, ctx);
          break;
        }
        before = before.slice(again.count);
      }
      this.runOne(rest[tried.at]!, acc, ctx);
      rest = rest.slice(tried.at + 1);
    }
    return acc;
  }

  /**
   * Runs ops in one draft, up to the first that aliases a draft (see `TouchRecorder.aliased`)
   * or all of them. Adopts the outcome into `acc` and returns how many ran when all of those
   * succeeded; the index of the first that threw or left an invalid state (nothing adopted); or
   * "unusable" when Immer failed after the recipes returned (nothing adopted).
   */
  private runShared<R extends RecipeRun>(
    ops: readonly R[],
    acc: Acc<S, R>,
    ctx: UpdateContext,
  ): { kind: "ran"; count: number } | { kind: "failed"; at: number } | { kind: "unusable" } {
    const recorder = new TouchRecorder();
    const writes: Touch["path"][] = [];
    const results: unknown[] = [];
    let failedAt = -1;
    let unfrozen: unknown;
    let p: Patch[];
    try {
      [unfrozen, p] = immer.produceWithPatches(acc.state, (draft) => {
        const view = recorder.wrap(draft);
        for (let i = 0; i < ops.length; i++) {
          try {
            const returned = runIn(ops[i]!, view, ctx);
            // A write into what an earlier op wrote, refused here: alone it is a write (the op
            // may have caught the refusal, or sloppy mode hidden it). Or a question to Immer
            // about a draft, answered of the shared draft (`TouchRecorder.takeRunAlone`). Or a
            // draft reached without a view (`escaped`): its writes are no touches, and neither
            // checked nor frozen here; alone, Immer's patches are checked.
            if (recorder.takeRunAlone() || recorder.escaped) throw ABORT;
            // Before its drafts are copied: a copy of an array left with a length of 1e8 walks
            // every index (26 s), its refusal is at once.
            recorder.refuseHoles(draft, holes);
            const result = detachResult(returned, recorder);
            refuseThenable(result);
            const touches = recorder.take();
            for (const t of touches) writes.push(t.path);
            if (touches.length > 0) {
              const written = withValues(draft, touches);
              this.check(acc.state, draft as S, written);
              for (const w of written) {
                if (w.op !== "remove" && !freezeWritten(w.value)) recorder.aliased = true;
              }
            }
            results.push(result);
          } catch {
            failedAt = i;
            throw ABORT;
          }
          if (recorder.aliased) break;
        }
      });
    } catch (e) {
      if (e === ABORT && failedAt >= 0) return { kind: "failed", at: failedAt };
      return { kind: "unusable" };
    }
    let produced: S;
    try {
      produced = freezeProduced(unfrozen as S, recorder, writes);
    } catch {
      return { kind: "unusable" };
    }
    acc.state = produced;
    for (const patch of p) acc.patches.push(patch as StoredPatch);
    results.forEach((result, i) => {
      const op = ops[i]!;
      if (op.command) acc.commands.push(op.command);
      acc.results.set(op, result);
    });
    return { kind: "ran", count: results.length };
  }

  /**
   * Runs one op in its own draft (the reference semantics) and adopts its outcome into `acc`.
   * The recipe writes through a `TouchRecorder`'s view of the draft, so the state it produced is
   * frozen along what it wrote (`freezeAlong`: a few µs whatever the state's size, where a walk
   * of every copied container costs a record of 10,000 entities 10,000 visits), and an array it
   * left with holes is refused before Immer finalizes the draft (`refuseHoles`).
   */
  private runOne<R extends RecipeRun>(op: R, acc: Acc<S, R>, ctx: UpdateContext): void {
    const next = acc.state;
    const recorder = new TouchRecorder();
    let returned = false;
    try {
      let result: unknown;
      // statesync's Immer, frozen here (only the new containers: freeze.ts).
      const [unfrozen, p] = immer.produceWithPatches(next, (draft) => {
        result = runIn(op, recorder.wrap(draft), ctx);
        returned = true;
        recorder.refuseHoles(draft, holes);
        // Drafts in it would be revoked proxies once produce returns: hand back copies.
        result = detachResult(result, recorder);
        refuseThenable(result);
      });
      const touches = recorder.take();
      const produced = freezeProduced(
        unfrozen as S,
        recorder,
        touches.map((t) => t.path),
      );
      if (p.length > 0) this.check(next, produced, p);
      acc.state = produced;
      for (const patch of p) acc.patches.push(patch as StoredPatch);
      if (op.command) acc.commands.push(op.command);
      acc.results.set(op, result);
    } catch (e) {
      // What the recipe threw reaches the caller unchanged (a command's domain error, say),
      // where the same command appended unconditionally is reported as COMMAND_FAILED. What
      // Immer threw after the recipe returned (a result nested so deep that finalizing it
      // overflows the stack) is a VALIDATION error of the update.
      acc.failures.set(
        op,
        returned && !(e instanceof StateSyncError) ? this.unusable(op, next, ctx, e) : e,
      );
    }
  }

  /**
   * The `VALIDATION` error of a result Immer could not keep (it threw after the recipe returned:
   * a value nested so deep that Immer's recursive walk overflowed the stack). The recipe runs once
   * more (recipes may run several times: conflicts run them again) with a recorder, in a draft
   * that is dropped, and what it wrote gets `checkWritten`, which names the value, where it was
   * written and how deep it nests; failing that, `cause` is reported as it is.
   */
  private unusable<R extends RecipeRun>(
    op: R,
    state: S,
    ctx: UpdateContext,
    cause: unknown,
  ): StateSyncError {
    const recorder = new TouchRecorder();
    let found: StateSyncError | undefined;
    try {
      immer.produce(state, (draft) => {
        try {
          refuseThenable(recorder.unwrap(runIn(op, recorder.wrap(draft), ctx)));
        } catch {
          throw ABORT;
        }
        try {
          checkWritten(withValues(draft, recorder.take()));
        } catch (e) {
          if (e instanceof StateSyncError) found = e;
        }
        throw ABORT;
      });
    } catch {
      // ABORT: the draft is dropped.
    }
    return found ?? unusableResult(cause);
  }

  /**
   * Checks the state a recipe produced: first that every value its patches put in is JSON and
   * can be written (`checkWritten`, iteratively, before anything recursive touches it), then the
   * model's schema (along the patched paths where the schema allows it; see `StateChecker`).
   * Only the values the patches put in need looking at: the state before was checked.
   */
  private check(before: S, after: S, patches: readonly Patch[]): void {
    checkWritten(patches);
    this.checker.check(before, after, patches);
  }
}

/**
 * Throws `VALIDATION` unless each value `patches` write is JSON and fits both limits a
 * conditional update has (docs/format.md, "Limits"): the state may nest at most
 * `MAX_STATE_DEPTH` levels (a state that deep could never be compacted, switched, saved or
 * exported: docs/guarantees.md), and its update entry carries a patch's value three levels down,
 * so a value of at most `MAX_PATCH_VALUE_DEPTH` levels. A value sits under as many arrays and
 * objects as its path has steps: the state's depth there is the path's length plus the value's
 * own depth, found by the walk each written value gets anyway.
 */
function checkWritten(patches: readonly Patch[]): void {
  for (const patch of patches) {
    if (patch.op === "remove") continue;
    const room = Math.min(MAX_STATE_DEPTH - patch.path.length, MAX_PATCH_VALUE_DEPTH);
    // A path longer than the limit (through a state an unconditional command nested that
    // deep) leaves no room even for a number.
    const problem =
      findJsonProblemWithDepth(patch.value, Math.max(room, 0)) ??
      (room < 0 ? { path: "$", message: "", depth: 0 } : undefined);
    if (problem === undefined) continue;
    const at = `$${pathText(patch.path)}`;
    if (problem.depth === undefined) {
      throw new StateSyncError(
        "VALIDATION",
        `the update would put a non-JSON value in the state (${at}${problem.path.slice(1)}: ${problem.message})`,
      );
    }
    const { depth } = problem;
    const details = {
      path: at,
      depth,
      maxDepth: MAX_STATE_DEPTH,
      maxValueDepth: MAX_PATCH_VALUE_DEPTH,
    };
    const writes = `the update writes a value nested ${depth} levels deep at ${at}`;
    throw new StateSyncError(
      "VALIDATION",
      patch.path.length + depth > MAX_STATE_DEPTH
        ? `${writes}: it would nest the state's arrays and objects ${patch.path.length + depth} levels deep, deeper than ${MAX_STATE_DEPTH} levels, the most a state may have (docs/format.md, "Limits"); nothing was appended`
        : `${writes}; an update entry carries values of at most ${MAX_PATCH_VALUE_DEPTH} levels (docs/format.md, "Limits": write the value's container in one update and the value into it in the next); nothing was appended`,
      { details },
    );
  }
}

/**
 * Freezes a state produced from the frozen state before it: along the recorded writes when they
 * are all of them (no draft escaped the recorder's views, none was put at a second place),
 * otherwise by walking every new container.
 */
function freezeProduced<S>(
  unfrozen: S,
  recorder: TouchRecorder,
  writes: ReadonlyArray<Touch["path"]>,
): S {
  if (!recorder.aliased && !recorder.escaped) return freezeAlong(unfrozen, writes);
  // Writes the recorder did not see: walk the whole state, holes included.
  let hole = false;
  freezeWalk(unfrozen, () => (hole = true));
  if (hole) throw holes();
  return unfrozen;
}

function unusableResult(cause: unknown): StateSyncError {
  return new StateSyncError(
    "VALIDATION",
    `the update's result cannot be kept (${String(cause)}); is it nested too deep? nothing was appended`,
    { cause },
  );
}
