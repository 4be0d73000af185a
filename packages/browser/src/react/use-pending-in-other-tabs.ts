import type { OtherTabPending, StateSynchronizer } from "@statesync/core";
import { useMemo, useSyncExternalStore } from "react";

/**
 * Other tabs' pending updates that this tab shows (`sync.pendingInOtherTabs`, docs/offline.md
 * "Tabs"), as React state: re-renders when a tab reports a change or this tab reads one of them
 * back from the log. Empty for a replica that shares no tabs.
 */
export function usePendingInOtherTabs(
  sync: StateSynchronizer<any, any>,
): readonly OtherTabPending[] {
  // `pendingInOtherTabs` builds a new list on each read: keep one until something changes.
  const store = useMemo(() => {
    let cached: readonly OtherTabPending[] | undefined;
    return {
      subscribe(onChange: () => void) {
        const changed = () => {
          cached = undefined;
          onChange();
        };
        const stops = [sync.subscribe(changed, { optimistic: true }), sync.subscribe(changed)];
        return () => stops.forEach((stop) => stop());
      },
      get: () => (cached ??= sync.pendingInOtherTabs),
    };
  }, [sync]);
  return useSyncExternalStore(store.subscribe, store.get, store.get);
}
