import { StateSyncError } from "./errors.js";

/**
 * Recipes and command `apply`s are synchronous (README, "Recipes are synchronous"): Immer
 * finishes with a draft, and revokes it, when the recipe returns. One that returns a promise (an
 * `async` function) or any thenable is refused wherever it runs, by {@link refuseThenable}:
 *
 * - a conditional update's recipe or named command (the writer's `RecipeRunner`, the pending
 *   queue's optimistic view and its pushes) fails `VALIDATION` and appends nothing;
 * - an unconditional command's entry (apply.ts, live or replaying, batched or not) is a
 *   `COMMAND_FAILED` no-op on every replica alike (`details.reason: "threw"`).
 *
 * What it wrote before returning is dropped with its draft. The promise it returned gets a
 * rejection handler at once: its continuation runs after the draft is revoked, and a write there
 * throws (`Cannot perform 'set' on a proxy that has been revoked`) into that promise, which
 * nothing else handles; an unhandled rejection ends a Node process (a fresh-eyes trial: every
 * process holding a replica of a log with such a command exited, and every replica opened on it
 * later).
 */
export function refuseThenable(result: unknown, command?: string): void {
  if (!isThenable(result)) return;
  handle(result);
  const error = new StateSyncError(
    "VALIDATION",
    command === undefined
      ? "recipes must be synchronous (this one returned a promise); nothing was applied"
      : `command "${command}" returned a promise: recipes must be synchronous (an async apply, or any thenable, is refused); nothing was applied`,
    command === undefined ? undefined : { details: { command } },
  );
  refusals.add(error);
  throw error;
}

/** The errors {@link refuseThenable} threw. */
const refusals = new WeakSet<object>();

/** Whether `e` is the error {@link refuseThenable} threw (a recipe returned a thenable). */
export function isThenableRefusal(e: unknown): e is StateSyncError {
  return typeof e === "object" && e !== null && refusals.has(e);
}

/** True for an object or function with a `then` method (read once; a throwing getter: false). */
function isThenable(v: unknown): v is PromiseLike<unknown> {
  if (v === null || (typeof v !== "object" && typeof v !== "function")) return false;
  try {
    return typeof (v as { then?: unknown }).then === "function";
  } catch {
    return false;
  }
}

/**
 * Attaches a handler that swallows the rejection of `thenable`. `Promise.resolve` hands a
 * native promise back as it is (the handler goes on it), and calls any other thenable's `then`
 * in a job of its own, where whatever it throws rejects the promise handled here.
 */
function handle(thenable: PromiseLike<unknown>): void {
  try {
    Promise.resolve(thenable).then(undefined, () => undefined);
  } catch {
    // A hostile `constructor` getter: nothing more can be done.
  }
}

/** How many recipe runs are on the stack (of any replica of this realm). */
let recipesRunning = 0;

/**
 * Runs `work` (recipes, or commands' `apply`s, on a draft: the writer's, the optimistic views',
 * the log's commands in apply.ts) marked as inside recipes, for {@link assertOutsideRecipes}. A command applied
 * from the log is one too: an `apply` that called `update()` made every replica that applied it
 * append (a fresh-eyes trial, stop 26: one command, three more entries with three replicas).
 */
export function inRecipes<T>(work: () => T): T {
  recipesRunning += 1;
  try {
    return work();
  } finally {
    recipesRunning -= 1;
  }
}

/**
 * Throws `VALIDATION` when called while a recipe runs: `update()` or `updateUnconditionally()`
 * called from inside a recipe or a command's `apply` (a side effect, which recipes must not have:
 * they run again on every conflict, and on every replica). Thrown, not returned as a rejection,
 * so the recipe fails with it (unless it catches it) and so does the update that ran it; before, each of its 64 runs queued another update, and all of them
 * committed (a stop 26 trial: one call, 64 writes and 62 intent entries).
 */
export function assertOutsideRecipes(what: string): void {
  if (recipesRunning === 0) return;
  throw new StateSyncError(
    "VALIDATION",
    `${what}() was called from inside a recipe: recipes must have no side effects (they run again on every conflict); call it after the update resolves`,
  );
}
