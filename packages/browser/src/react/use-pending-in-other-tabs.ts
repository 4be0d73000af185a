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
        // The optimistic view's notifications only: they follow confirmed changes too, spaced
        // after a costly view (a plain subscription re-read the list, and recomputed the view,
        // at every entry: a burst of a thousand edits in two tabs kept the page too busy to
        // reload within 30 s).
        return sync.subscribe(onChange, { optimistic: true });
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
