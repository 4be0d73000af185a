/**
 * `@statesync/browser`: statesync for browsers. Everything of `@statesync/core`, plus a
 * WebSocket connection with `nats.ws` (`openSynchronizer`), snapshots in IndexedDB
 * (`IndexedDbSnapshotStore`) and a hook for test runners (`exposeSynchronizer`). React hooks
 * are in `@statesync/browser/react`.
 */
export * from "@statesync/core";
export { openSynchronizer, type OpenSynchronizerOptions } from "./open-synchronizer.js";
export {
  IndexedDbSnapshotStore,
  SnapshotStoreWarning,
  type IndexedDbSnapshotStoreOptions,
  type SnapshotFallbackReason,
  type SnapshotWarningReason,
} from "./indexeddb-snapshot-store.js";
export { PendingQueueWarning } from "./pending-warning.js";
export type { StoredSnapshot } from "./snapshot-codec.js";
export { connectInBackground, type BackgroundConnection } from "./background-connect.js";
export { saveSnapshotOnHide } from "./save-on-hide.js";
export { keepSnapshotCurrent, type SnapshotSaving } from "./keep-snapshot-current.js";
export {
  exposeSynchronizer,
  probeSynchronizer,
  EXPOSED_GLOBAL,
  type ExposedSynchronizer,
  type SyncProbe,
} from "./expose.js";
export { TabLog, type TabLogOptions, type LeaderLog } from "./tabs/tab-log.js";
export type { LockManagerLike, TokenStore } from "./tabs/leadership.js";
export {
  IndexedDbPendingStore,
  type IndexedDbPendingStoreOptions,
} from "./indexeddb-pending-store.js";
