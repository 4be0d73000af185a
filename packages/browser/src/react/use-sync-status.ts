import type { StateSynchronizer, SyncStatus } from "@statesync/core";
import { useCallback, useSyncExternalStore } from "react";

/**
 * The replica's {@link SyncStatus} (`connecting`, `live`, `offline`, `stalled`, `closed`) as
 * React state; re-renders on each status change (the replica's `"status"` event).
 */
export function useSyncStatus(sync: StateSynchronizer<any, any>): SyncStatus {
  const subscribe = useCallback(
    (onChange: () => void) => sync.on("status", () => onChange()),
    [sync],
  );
  const getSnapshot = useCallback(() => sync.status, [sync]);
  return useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
}
