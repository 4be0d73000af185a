import type { StateSynchronizer } from "@statesync/core";
import { useCallback } from "react";
import { useSyncExternalStoreWithSelector } from "use-sync-external-store/with-selector";
import { checkedStateArguments, type SynchronizedStateOptions } from "./state-options.js";

/** The (deeply frozen) state type of a replica of `S`. */
type StateOf<S> = StateSynchronizer<S, any>["state"];

export type { SynchronizedStateOptions } from "./state-options.js";

const identity = <T>(value: T): T => value;

/**
 * The replica's state, or the slice `selector` picks from it, as React state
 * (`useSyncExternalStore` with `use-sync-external-store/with-selector`): by default the
 * optimistic view (see {@link SynchronizedStateOptions}). The component re-renders only when the
 * selected slice changes by `isEqual` (default `Object.is`): states are immutable and
 * structurally shared (Immer), so an untouched slice keeps its identity.
 *
 * `selector` and `isEqual` may be inline functions: the selection is memoised per state, and the
 * previous slice is kept while `isEqual` says it is equal. Without a selector, the whole state.
 * The options may come third when there is no `isEqual`:
 * `useSynchronizedState(sync, (s) => s.a, { view: "confirmed" })`.
 *
 * Throws `VALIDATION` ("invalid useSynchronizedState options", naming the option) in the render
 * for a selector or isEqual that is no function, options that are no object, an unknown key
 * (strict, as every statesync option) or a `view` that is none, and for options given both
 * third and fourth.
 */
export function useSynchronizedState<S, T = StateOf<S>>(
  sync: StateSynchronizer<S, any>,
  selector: (state: StateOf<S>) => T = identity as (state: StateOf<S>) => T,
  isEqualOrOptions?: ((a: T, b: T) => boolean) | SynchronizedStateOptions,
  options?: SynchronizedStateOptions,
): T {
  const checked = checkedStateArguments(selector, isEqualOrOptions, options);
  const isEqual = checked.isEqual as ((a: T, b: T) => boolean) | undefined;
  const optimistic = checked.optimistic;
  const subscribe = useCallback(
    (onChange: () => void) => sync.subscribe(() => onChange(), { optimistic }),
    [sync, optimistic],
  );
  const getSnapshot = useCallback(
    () => (optimistic ? sync.optimisticState : sync.state),
    [sync, optimistic],
  );
  return useSyncExternalStoreWithSelector(subscribe, getSnapshot, getSnapshot, selector, isEqual);
}
