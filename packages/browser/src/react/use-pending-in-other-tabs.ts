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
  const store = useMemo(() => {
    let last: readonly OtherTabPending[] = [];
    return {
      subscribe(onChange: () => void) {
        const stops = [sync.subscribe(onChange, { optimistic: true }), sync.subscribe(onChange)];
        return () => stops.forEach((stop) => stop());
      },
      // Read afresh each time (a report can arrive between the first render and the
      // subscription), the same list kept while its items are the same: React compares by
      // identity.
      get: () => {
        const next = sync.pendingInOtherTabs;
        if (!sameItems(last, next)) last = next;
        return last;
      },
    };
  }, [sync]);
  return useSyncExternalStore(store.subscribe, store.get, store.get);
}

function sameItems(a: readonly OtherTabPending[], b: readonly OtherTabPending[]): boolean {
  return (
    a.length === b.length &&
    a.every((x, i) => {
      const y = b[i]!;
      return x.tab === y.tab && x.queuedAt === y.queuedAt && x.args === y.args;
    })
  );
}
