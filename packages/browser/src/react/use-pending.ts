import type { PendingUpdate, StateSynchronizer } from "@statesync/core";
import { useMemo, useSyncExternalStore } from "react";

/**
 * The replica's pending updates (docs/offline.md), in queue order, as React state: re-renders
 * when one is queued, committed, refused or discarded. Empty without the `pending` option.
 */
export function usePending(sync: StateSynchronizer<any, any>): readonly PendingUpdate[] {
  // `sync.pending` builds a new list on each call: keep one until something changes.
  const store = useMemo(() => {
    let cached: readonly PendingUpdate[] | undefined;
    return {
      subscribe(onChange: () => void) {
        const changed = () => {
          cached = undefined;
          onChange();
        };
        // Not a plain subscription: the optimistic view's notifications follow every change of
        // the queue and of the confirmed state, spaced after a costly view; a plain one
        // re-rendered the page at every entry, and the page's view was recomputed each time (a
        // trial: two tabs making 1,000 edits each kept a page busy for a minute, 48 s of it in
        // such renders).
        const stops = [
          sync.subscribe(changed, { optimistic: true }),
          sync.on("drained", changed),
          sync.on("refused", changed),
        ];
        return () => stops.forEach((stop) => stop());
      },
      get: () => (cached ??= sync.pending),
    };
  }, [sync]);
  return useSyncExternalStore(store.subscribe, store.get, store.get);
}
