/**
 * `@statesync/browser/react`: React hooks over a `StateSynchronizer` (React 18 or later, an
 * optional peer dependency of `@statesync/browser`).
 */
export { useSynchronizedState } from "./use-synchronized-state.js";
export { useSyncStatus } from "./use-sync-status.js";
export { useWritable, type WritableState } from "./use-writable.js";
export { useRevision } from "./use-revision.js";
export { usePending } from "./use-pending.js";
export { usePendingInOtherTabs } from "./use-pending-in-other-tabs.js";
export type { SynchronizedStateOptions } from "./use-synchronized-state.js";
