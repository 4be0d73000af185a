import type { StateSynchronizer } from "@statesync/core";
import { useCallback } from "react";
import { useSyncExternalStoreWithSelector } from "use-sync-external-store/with-selector";

/** The (deeply frozen) state type of a replica of `S`. */
type StateOf<S> = StateSynchronizer<S, any>["state"];

const identity = <T>(value: T): T => value;

/**
 * The replica's state, or the slice `selector` picks from it, as React state
 * (`useSyncExternalStore` with `use-sync-external-store/with-selector`). The component
 * re-renders only when the selected slice changes by `isEqual` (default `Object.is`): states
 * are immutable and structurally shared (Immer), so an untouched slice keeps its identity.
 *
 * `selector` and `isEqual` may be inline functions: the selection is memoised per state, and the
 * previous slice is kept while `isEqual` says it is equal. Without a selector, the whole state.
 */
export function useSynchronizedState<S, T = StateOf<S>>(
  sync: StateSynchronizer<S, any>,
  selector: (state: StateOf<S>) => T = identity as (state: StateOf<S>) => T,
  isEqual?: (a: T, b: T) => boolean,
): T {
  const subscribe = useCallback((onChange: () => void) => sync.subscribe(() => onChange()), [sync]);
  const getSnapshot = useCallback(() => sync.state, [sync]);
  return useSyncExternalStoreWithSelector(subscribe, getSnapshot, getSnapshot, selector, isEqual);
}
