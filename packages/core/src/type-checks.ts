import type { z } from "zod/v4";
import type { CommandSchemas, Model } from "./model.js";
import type { Recipe } from "./synchronizer-types.js";

/*
 * Type-level checks of the mistakes statesync otherwise refuses only at run time, each a type
 * error whose message names the problem (packages/core/test/type-messages.test.ts reads them):
 * an async recipe (`SyncRecipe`), `StateSynchronizer<typeof model>` (`StateTypeCheck`), and
 * schemas that admit values that are not JSON (`JsonModelCheck`): a `VALIDATION` error when the
 * model is defined (the state) or when a command is sent (its arguments).
 *
 * What counts as JSON here: strings, numbers, booleans, null, arrays and tuples of JSON, and
 * objects whose properties are JSON; an optional property may be absent. Refused: `Date`, `Map`,
 * `Set`, `bigint`, `symbol`, functions, class instances with methods, and `undefined` as a value
 * (a required property typed `T | undefined`, an array of `T | undefined`). `any` and `unknown`
 * pass (the run-time check still applies to their values), and so does `number`, although NaN
 * and the infinities are refused at run time: no type tells them apart.
 */

/**
 * The JSON counterpart of `T`: `T` itself where it is JSON, `never` in place of every part that
 * is not. `T` is JSON when it is assignable to `JsonShape<T>`. An optional property keeps its
 * `?` (the mapped type is homomorphic), so it may still be absent.
 */
export type JsonShape<T> = 0 extends 1 & T
  ? T
  : unknown extends T
    ? T
    : T extends string | number | boolean | null
      ? T
      : T extends (...args: never[]) => unknown
        ? never
        : T extends readonly unknown[]
          ? number extends T["length"]
            ? JsonArray<T[number]>
            : { [K in keyof T]: JsonShape<T[K]> }
          : T extends object
            ? { [K in keyof T]: JsonShape<Exclude<T[K], undefined>> | AbsentAs<T, K> }
            : never;

/**
 * `undefined` when `K` is optional in `T`, else `never`: an optional property typed
 * `T | undefined` (zod's `.optional()` infers `a?: string | undefined`) stays JSON under
 * `exactOptionalPropertyTypes` too (a fresh-eyes trial: every `.optional()` was refused there);
 * a required property typed `T | undefined` is still refused.
 */
type AbsentAs<T, K extends keyof T> = object extends Pick<T, K> ? undefined : never;

/**
 * An array of JSON elements. An interface, so its element type is worked out only when it is
 * compared: a recursive type such as zod's `JSONType` (an array of itself) would otherwise be
 * expanded without end.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the interface is the point
export interface JsonArray<E> extends ReadonlyArray<JsonShape<E>> {}

/**
 * `true` when `T` is not JSON (see {@link JsonShape}), `false` when it is, and for `any`. Asked
 * as "not JSON?" so that a check on a type parameter, which cannot be decided, passes: TypeScript
 * relates a value to an undecided conditional type through the branches it cannot rule out, and
 * with `T` replaced by a wildcard this is `false`, ruling out the refusing branch. A function
 * generic in the state can then still call `defineModel`; the check applies where it is called
 * with a known state type.
 */
export type NotJson<T> = [T] extends [JsonShape<T>] ? false : true;

/** The message `defineModel` shows for a state schema whose output is not JSON. */
export interface StateNotJson {
  "the model's state schema admits values that are not JSON (Date, Map, Set, bigint, function, undefined)": never;
}

/** The message `defineModel` shows for a command whose argument schema's input is not JSON. */
export interface ArgsNotJson {
  "this command's args schema admits values that are not JSON (Date, Map, Set, bigint, function, undefined)": never;
}

/**
 * What `defineModel`'s definition must also be: nothing more when the state schema's output and
 * each command's argument schema's input are JSON; otherwise the state schema, or that
 * command's `args`, must also be a {@link StateNotJson} or {@link ArgsNotJson}, which no schema
 * is, so the error points at it and names the problem. Arguments are checked on their input,
 * which is what an entry stores: a transform to a `Date` for `apply` is fine.
 */
export type JsonModelCheck<S, A extends CommandSchemas> = (NotJson<S> extends true
  ? { state: StateNotJson }
  : unknown) & {
  commands: {
    [K in keyof A]: NotJson<z.input<A[K]>> extends true ? { args: ArgsNotJson } : unknown;
  };
};

/**
 * What `update` takes as a recipe: a {@link Recipe} whose result is no promise (nor any
 * thenable: an object with a `then` method). An async recipe would mutate its draft after Immer
 * has finished with it, so it is refused: at run time with `VALIDATION`, and here as a type
 * error that names the missing property below. A result typed `any` passes (it cannot be told
 * apart).
 */
export type SyncRecipe<S, R> = Recipe<S, R> &
  (ReturnsThenable<R> extends true
    ? { "recipes must be synchronous: this one returns a promise": never }
    : unknown);

/**
 * `true` when `R` is or may be a thenable, `false` when it is not, and for `any`. Asked as
 * "thenable?" (as {@link NotJson} asks "not JSON?") so that a check on a type parameter, which
 * cannot be decided, passes: a helper generic in the recipe's result (`recipe: Recipe<S, R>`)
 * can call `update` (a fresh-eyes trial: it could not); the check applies where `R` is known.
 * `any` and `unknown` pass (they cannot be told apart).
 */
export type ReturnsThenable<R> = [R] extends [Exclude<R, { then(...args: never[]): unknown }>]
  ? false
  : true;

/**
 * The type of `StateSynchronizer["~stateType"]`: `never` when `S` is a model, so no real replica
 * fits `StateSynchronizer<typeof model>`, and the error names this property and its message.
 */
export type StateTypeCheck<S> = 0 extends 1 & S
  ? unknown
  : [S] extends [Model<any, any>]
    ? never
    : "StateSynchronizer<S> takes the state type; for a model write SynchronizerOf<typeof model>";
