import type { StateSynchronizer } from "@statesync/core";
import { useCallback } from "react";
import { useSyncExternalStoreWithSelector } from "use-sync-external-store/with-selector";

/** The (deeply frozen) state type of a replica of `S`. */
type StateOf<S> = StateSynchronizer<S, any>["state"];

/** Options of {@link useSynchronizedState}. */
export interface SynchronizedStateOptions {
  /**
   * `"optimistic"` (default): `sync.optimisticState`, the confirmed state with this replica's
   * pending updates on top (docs/offline.md), so an edit shows at once, offline too;
   * `"confirmed"`: `sync.state`, what the log holds as far as this replica has read.
   */
  view?: "optimistic" | "confirmed";
}

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
 */
export function useSynchronizedState<S, T = StateOf<S>>(
  sync: StateSynchronizer<S, any>,
  selector: (state: StateOf<S>) => T = identity as (state: StateOf<S>) => T,
  isEqualOrOptions?: ((a: T, b: T) => boolean) | SynchronizedStateOptions,
  options: SynchronizedStateOptions = {},
): T {
  const isEqual = typeof isEqualOrOptions === "function" ? isEqualOrOptions : undefined;
  if (isEqualOrOptions !== undefined && typeof isEqualOrOptions !== "function") {
    options = isEqualOrOptions;
  }
  const optimistic = options.view !== "confirmed";
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
