import type { StateSynchronizer, StateSyncError } from "@statesync/core";
import { useCallback, useRef, useSyncExternalStore } from "react";

/** What {@link useWritable} returns: `sync.writable` and `sync.writeError`, taken together. */
export interface WritableState {
  /** Whether updates are expected to reach the log (the README's `writable`). */
  readonly writable: boolean;
  /** Why not, while `writable` is false (`PERMISSION_DENIED`, `STREAM_CONFIG`, …). */
  readonly writeError: StateSyncError | undefined;
}

/**
 * `sync.writable` and `sync.writeError` as React state: re-renders on each `"writable"` event
 * (a denied append, a stream configuration the log refuses, a closed replica; true again after an
 * append succeeds). The same object while neither changes. For a banner such as "read-only:
 * {writeError.message}"; `useSyncStatus` says whether the replica is connected at all.
 */
export function useWritable(sync: StateSynchronizer<any, any>): WritableState {
  const last = useRef<WritableState | undefined>(undefined);
  const subscribe = useCallback(
    (onChange: () => void) => sync.on("writable", () => onChange()),
    [sync],
  );
  const getSnapshot = useCallback((): WritableState => {
    const { writable, writeError } = sync;
    const known = last.current;
    if (known?.writable === writable && known.writeError === writeError) return known;
    return (last.current = { writable, writeError });
  }, [sync]);
  return useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
}
