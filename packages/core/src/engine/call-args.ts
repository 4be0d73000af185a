/**
 * The arguments of the replica's calls that take something other than an update (those are
 * options.ts's `parseUpdateOptions`): `waitFor`, `synced`, `subscribe`, `discard`, `history`,
 * `stateAt`, `upgrade`, and none at all for `compact`, `saveSnapshot`, `flush`,
 * `clearPending`, `rebindPending`. Each is checked with zod at the call, before any work starts,
 * and bad input is `VALIDATION` naming the call and what is wrong (an unknown key by name).
 *
 * The kind of fault (a fresh-eyes trial): these calls read their arguments as the types said and
 * trusted them. `synced({ signal: "x" })` rejected with a raw `TypeError` from a `WeakMap`, after
 * it had started a catch-up that then rejected unhandled at `close()` (Node exited with status
 * 1); `synced(null)` threw synchronously; `stateAt(undefined)` said `TRUNCATED`; and
 * `history({ form: 1 })` or `subscribe(fn, { optimistc: true })` did something else than asked,
 * in silence.
 *
 * `undefined` options are the defaults; `null` is not an options object and is `VALIDATION`
 * (the types do not allow it either).
 */
import { z } from "zod/v4";
import { StateSyncError } from "../errors.js";
import { validation } from "./options.js";
import { safeParse } from "../schema-parse.js";

/** An `AbortSignal` (from this realm: the engine listens to it with `addEventListener`). */
const signalSchema = z.custom<AbortSignal>(
  (v) => v instanceof AbortSignal,
  "signal must be an AbortSignal",
);

/** A revision: a non-negative safe integer (zod's `int()` is bounded to safe integers). */
const revisionSchema = z.number().int().nonnegative();

const waitOptionsSchema = z.strictObject({ signal: signalSchema.optional() }).optional();

const subscribeOptionsSchema = z.strictObject({ optimistic: z.boolean().optional() }).optional();

const historyOptionsSchema = z
  .strictObject({ from: revisionSchema.optional(), to: revisionSchema.optional() })
  .optional();

const upgradeOptionsSchema = z.strictObject({ dryRun: z.boolean().optional() }).optional();

/** A pending update's id: a positive safe integer. */
const pendingIdSchema = z.number().int().positive();

/**
 * Checks `value` against `schema`; throws `VALIDATION` (`what` names the call's argument, zod
 * says what is wrong and where) or returns what it parsed.
 */
function check<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = safeParse(schema, value);
  if (!parsed.success) throw validation(what, parsed.error);
  return parsed.data;
}

/**
 * The options of `waitFor` or `synced` (`call` names it): `{ signal? }` or undefined. Returns the
 * signal, if any. Throws `VALIDATION` for anything else (`null`, a signal that is not an
 * `AbortSignal`, an unknown key).
 */
export function parseWaitOptions(
  options: unknown,
  call: "waitFor" | "synced",
): AbortSignal | undefined {
  return check(waitOptionsSchema, options, `invalid ${call} options`)?.signal;
}

/**
 * The options of `subscribe`: `{ optimistic? }` or undefined. Returns whether the listener wants
 * the optimistic view. Throws `VALIDATION` for anything else (an unknown key, a non-boolean).
 */
export function parseSubscribeOptions(options: unknown): boolean {
  return check(subscribeOptionsSchema, options, "invalid subscribe options")?.optimistic === true;
}

/**
 * The options of `history`: `{ from?, to? }` (revisions: non-negative integers) or undefined, as
 * an object (never undefined). Throws `VALIDATION` for anything else (an unknown key such as
 * `form`, a bound that is not a non-negative integer, `from` after `to`).
 */
export function parseHistoryOptions(options: unknown): { from?: number; to?: number } {
  const parsed = check(historyOptionsSchema, options, "invalid history options") ?? {};
  const { from, to } = parsed;
  if (from !== undefined && to !== undefined && from > to) {
    // An empty listing would read as "nothing happened there" (the CLI refuses it too).
    throw new StateSyncError("VALIDATION", `from (${from}) is after to (${to})`);
  }
  return parsed;
}

/**
 * The options of `upgrade`: `{ dryRun? }` or undefined. Returns whether it is a dry run. Throws
 * `VALIDATION` for anything else (an unknown key, a non-boolean).
 */
export function parseUpgradeOptions(options: unknown): { dryRun: boolean } {
  return {
    dryRun: check(upgradeOptionsSchema, options, "invalid upgrade options")?.dryRun === true,
  };
}

/**
 * A revision argument (`call` names the call and the argument, e.g. `"stateAt's revision"`): a
 * non-negative integer. Throws `VALIDATION` for anything else, `undefined` included.
 */
export function parseRevision(value: unknown, call: string): number {
  return check(revisionSchema, value, `${call} must be a non-negative integer`);
}

/** `discard`'s id: a positive integer. Throws `VALIDATION` for anything else. */
export function parsePendingId(value: unknown): number {
  return check(pendingIdSchema, value, "discard takes a pending update's id (a positive integer)");
}

/**
 * A rejection for a call that takes no argument and got `count` (`compact(123)`,
 * `compact({ force: true })`, `saveSnapshot("x")`: a trial saw them succeed in silence, as if
 * an option had been taken); undefined when it got none. Undefined arguments count too.
 */
export function noArguments(call: string, count: number): Promise<never> | undefined {
  if (count === 0) return undefined;
  return Promise.reject(
    new StateSyncError("VALIDATION", `${call}() takes no arguments (given ${count})`),
  );
}
