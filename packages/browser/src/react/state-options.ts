/**
 * The check of `useSynchronizedState`'s arguments after `sync`: strict, as every statesync
 * option (`VALIDATION` "invalid useSynchronizedState options: ...", naming the option). Before, a
 * typo (`{ veiw: "confirmed" }`) or a wrong value (`{ view: "confimred" }`) showed the
 * optimistic view in silence, and options in the selector's place failed inside React
 * ("selector is not a function"). Takes only `StateSyncError` of `@statesync/core` (the React
 * entry point bundles no more of it).
 */
import { StateSyncError } from "@statesync/core";
import { z } from "zod/v4";
import { functionSchema, notAnObject } from "../option-words.js";

/** Options of `useSynchronizedState`. */
export interface SynchronizedStateOptions {
  /**
   * `"optimistic"` (default): `sync.optimisticState`, the confirmed state with this replica's
   * pending updates on top (docs/offline.md), so an edit shows at once, offline too;
   * `"confirmed"`: `sync.state`, what the log holds as far as this replica has read.
   */
  view?: "optimistic" | "confirmed";
}

/** zod schema of {@link SynchronizedStateOptions}: no other key. */
export const synchronizedStateOptionsSchema: z.ZodType<SynchronizedStateOptions> = z.strictObject(
  {
    view: z
      .enum(["optimistic", "confirmed"], {
        error: 'view must be "optimistic" (the default) or "confirmed"',
      })
      .optional(),
  },
  { error: notAnObject("{ view? }") },
);

/** The functions among the arguments after `sync`, by name. */
const functionsSchema = z.object({
  selector: functionSchema(
    "selector must be a function of the state, or left out (options without a selector: " +
      "useSynchronizedState(sync, undefined, { view }))",
  ),
  isEqual: functionSchema("isEqual must be a function (a, b) => boolean, or left out").optional(),
});

/** Options given third, then a fourth argument too. */
const onceSchema = z.undefined({
  error: "options come third (without isEqual) or fourth, not both",
});

/** What `useSynchronizedState` reads of its checked arguments. */
export interface StateArguments {
  isEqual: ((a: never, b: never) => boolean) | undefined;
  optimistic: boolean;
}

/**
 * `selector`, `third` (isEqual, or the options when it is not a function) and `fourth` (the
 * options) checked, or `VALIDATION` naming what is wrong (`→ at view`, `Unrecognized key`, as
 * openSynchronizer's). A third argument that is neither a function nor left out is read as the
 * options, unless a fourth follows and it is no object (then it was meant as isEqual).
 */
export function checkedStateArguments(
  selector: unknown,
  third: unknown,
  fourth: unknown,
): StateArguments {
  const thirdIsOptions =
    third !== undefined &&
    typeof third !== "function" &&
    (fourth === undefined || (typeof third === "object" && third !== null));
  const { isEqual } = checked(functionsSchema, {
    selector,
    isEqual: thirdIsOptions ? undefined : third,
  });
  if (thirdIsOptions) checked(onceSchema, fourth);
  const options = checked(
    synchronizedStateOptionsSchema.optional(),
    thirdIsOptions ? third : fourth,
  );
  return {
    isEqual: isEqual as StateArguments["isEqual"],
    optimistic: options?.view !== "confirmed",
  };
}

/** `value` as `schema` reads it, or `VALIDATION` in the words of core's `optionsRefused`. */
function checked<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new StateSyncError(
    "VALIDATION",
    `invalid useSynchronizedState options: ${z.prettifyError(parsed.error)}`,
    { cause: parsed.error },
  );
}
