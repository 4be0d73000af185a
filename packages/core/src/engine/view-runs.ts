import { produce } from "immer";
import { refuseThenable } from "../synchronous.js";
import { holesError, runOnView, TouchRecorder } from "./touch-recorder.js";
import { freezeWritten, withValues } from "./touch-values.js";

/**
 * `ops` run by `run` on `state` in order, each on a `TouchRecorder`'s view of a draft (see
 * {@link runOnView}), in as few drafts as can be: for the views that show queued updates (the
 * optimistic view, other tabs' pending updates in the browser). The state is the one a draft
 * per op gives, each op that throws (or returns a promise) there left out, as the writer's
 * batches of recipes do it (`RecipeRunner`):
 * - what each op wrote is frozen once it returned, so `current` returns it instead of copying
 *   it, and a later op reads it through a frozen value's view (frozen-view.ts: one object of
 *   shared traps per view, its members' views kept), which notes writes instead of recording
 *   them. A scan with `current` in each of 2,000 queued commands copied every card each time:
 *   the collab board's view after a reload took 26 s, against 5 s with the views it replaced,
 *   and 0.8 s frozen;
 * - an op that throws in a shared draft, or writes into what an earlier op of that draft wrote
 *   (refused there, even where the op catches the refusal or sloppy mode hides it: the view
 *   notes it, `TouchRecorder.takeRunAlone`), or asks Immer about a draft (`original`), runs
 *   again in a draft of its own, after the ops before it in one draft; the ops after it go on
 *   in a new shared draft;
 * - an op that puts a draft at a second place ends its shared draft: a later op writing through
 *   one place would change the other, where in a draft of its own it would not.
 */
export function runQueued<S, T>(
  state: S,
  ops: readonly T[],
  run: (view: unknown, op: T) => unknown,
): S {
  let next = state;
  let from = 0;
  while (from < ops.length) {
    let at = from;
    let threw = false;
    try {
      next = produce(next, (draft: object) => {
        for (; at < ops.length; at++) {
          let shared: boolean;
          try {
            shared = runFreezing(draft, (v) => run(v, ops[at]!));
          } catch (e) {
            threw = true;
            throw e;
          }
          // It put a draft at a second place: later ops get a draft of their own (see there).
          if (!shared) return void at++;
        }
      }) as S;
      from = at;
    } catch {
      // Not an op's throw (Immer's finalizing): one draft each, as before the shared drafts.
      if (!threw) return oneByOne(next, ops.slice(from), run);
      // The ops before it ran without throwing on this state: again in one draft.
      if (at > from) next = inOneDraft(next, ops.slice(from, at), run);
      next = oneByOne(next, [ops[at]!], run);
      from = at + 1;
    }
  }
  return next;
}

/** Thrown out of a shared draft by an op that must run alone (`TouchRecorder.takeRunAlone`). */
const RUN_ALONE = new Error(
  "a write into a value an earlier update of the draft wrote, or a question to Immer",
);

/** `ops` in one draft (freezing as {@link runQueued} does), or one draft each if one throws. */
function inOneDraft<S, T>(state: S, ops: readonly T[], run: (view: unknown, op: T) => unknown): S {
  try {
    return produce(state, (draft: object) => {
      for (const op of ops) runFreezing(draft, (v) => run(v, op));
    }) as S;
  } catch {
    return oneByOne(state, ops, run);
  }
}

/** `ops` one draft each, those that throw left out. */
function oneByOne<S, T>(state: S, ops: readonly T[], run: (view: unknown, op: T) => unknown): S {
  let next = state;
  for (const op of ops) {
    try {
      next = produce(next, (draft: object) => {
        refuseThenable(runOnView(draft, (v) => run(v, op)));
      }) as S;
    } catch {
      // left out; refused when it is pushed
    }
  }
  return next;
}

/**
 * {@link runOnView}, then what the recipe wrote is frozen (see {@link runQueued}). Returns false
 * when the draft must not be shared further: the recipe put a draft at a second place (a move:
 * the recorder cannot tell a draft taken out of its old place from one still there), which a
 * later recipe writing through one place would change at the other, where a draft of its own
 * would not (as `applyBatch` ends a batch there).
 */
function runFreezing(draft: object, recipe: (view: unknown) => unknown): boolean {
  const recorder = new TouchRecorder();
  refuseThenable(recorder.unwrap(recipe(recorder.wrap(draft))));
  // A write refused in the shared draft, caught or unseen (sloppy mode): alone it is a write.
  if (recorder.takeRunAlone()) throw RUN_ALONE;
  recorder.refuseHoles(draft, holesError);
  for (const w of withValues(draft, recorder.take())) {
    if (w.op !== "remove" && !freezeWritten(w.value)) recorder.aliased = true;
  }
  return !recorder.aliased && !recorder.escaped;
}
