import type { StateSynchronizer } from "@statesync/core";
import { useCallback, useSyncExternalStore } from "react";

/** The replica's revision as React state; re-renders after each batch of applied entries. */
export function useRevision(sync: StateSynchronizer<any, any>): number {
  const subscribe = useCallback((onChange: () => void) => sync.subscribe(() => onChange()), [sync]);
  const getSnapshot = useCallback(() => sync.revision, [sync]);
  return useSyncExternalStore(subscribe, getSnapshot, getSnapshot);
}
