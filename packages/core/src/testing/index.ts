/**
 * Test helpers for adapter authors: the conformance suites every `RevisionedLog` and
 * `SnapshotStore` passes. Import from `@statesync/core/testing` inside vitest test files.
 */
export {
  runRevisionedLogConformance,
  type RevisionedLogHarness,
} from "./revisioned-log-conformance.js";
export {
  runSnapshotStoreConformance,
  type SnapshotStoreHarness,
} from "./snapshot-store-conformance.js";
export {
  runPendingStoreConformance,
  type PendingStoreHarness,
} from "./pending-store-conformance.js";
