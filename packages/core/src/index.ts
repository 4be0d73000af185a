/**
 * `@statesync/core`: the runtime-neutral engine. A replicated state machine over a revisioned
 * log (NATS JetStream), after Pravega's StateSynchronizer. Runtime packages (`@statesync/node`,
 * `@statesync/browser`) connect, persist and re-export this.
 */
export {
  ERROR_CODES,
  StateSyncError,
  AppendConflictError,
  isStateSyncError,
  type StateSyncErrorCode,
} from "./errors.js";
export type {
  RevisionedLog,
  LogEntry,
  LogInfo,
  AppendResult,
  LogFollowHandler,
  LogFollower,
  LogConnectionStatus,
  LogStatusListener,
  LogConfigWatcher,
} from "./log.js";
export { firstRetainedEntry } from "./first-retained.js";
export { MemoryLog, type MemoryLogOptions } from "./memory-log.js";
export {
  snapshotRecordSchema,
  shouldReplaceSnapshot,
  checkSnapshotKey,
  checkSnapshotRecord,
  checkSnapshotRecordInSlices,
  isSnapshotStoreLike,
  type SnapshotRecord,
  type SnapshotStore,
} from "./snapshot-store.js";
export { MemorySnapshotStore } from "./memory-snapshot-store.js";
export { replacedSnapshotKey } from "./engine/discard-snapshot.js";
export {
  pendingRecordSchema,
  readPendingRecord,
  checkPendingRecord,
  checkPendingSeqs,
  isPendingSeq,
  MAX_PENDING_SEQ,
  ownerSchema as pendingOwnerSchema,
  isPendingStoreLike,
  DAMAGED_CONTENT_CHARS,
  type DamagedPendingRecord,
  type PendingLoad,
  type PendingStore,
  type PendingQueue,
  type PendingRecord,
} from "./pending/pending-store.js";
export { MemoryPendingStore } from "./pending/memory-pending-store.js";
export { pendingQueue, type PendingQueueSetup } from "./pending/pending-queue.js";
export {
  compareOrderKeys,
  earliestBefore,
  ORDER_WAIT_MS,
  type OrderKey,
  type PushOrder,
} from "./pending/push-order.js";
export type { PendingUpdate, QueuedInfo } from "./pending/pending-op.js";
export type { OtherTabPending } from "./pending/pending-api.js";
export { changesOnly, notifyDelayMs } from "./pending/optimistic.js";
export { MAX_ORIGINS } from "./pending/origins.js";
export {
  defineModel,
  type Model,
  type ModelDefinition,
  type CommandDefinition,
  type CommandMap,
  type CommandArgs,
  type CommandSchemas,
  type CommandsOf,
  type CommandCall,
  type UpdateContext,
} from "./model.js";
export {
  decodeEntry,
  encodeEntry,
  FORMAT_VERSION,
  CHECKED_COMMAND_FORMAT,
  COMMANDS_FORMAT,
  MAX_COMMANDS_PER_ENTRY,
  MAX_NESTING_DEPTH,
  MAX_STATE_DEPTH,
  type DecodeResult,
  type Entry,
  type GenesisEntry,
  type UpdateEntry,
  type CommandEntry,
  type CommandsEntry,
  type GroupedCommand,
  type SnapshotEntry,
  type ChunkedSnapshotEntry,
  type PartEntry,
  type SnapshotParts,
  type IntentEntry,
  type SwitchEntry,
  type StoredPatch,
  type EntryOrigin,
  type OriginRow,
} from "./entry.js";
export {
  stateHash,
  canonicalJson,
  findNonJson,
  findJsonProblem,
  jsonEqual,
  type JsonProblem,
  type JsonValue,
} from "./json.js";
export { nestedDeeperThan } from "./nesting.js";
export { safeParse } from "./schema-parse.js";
export { refuseThenable } from "./synchronous.js";
export { entryContext, pendingContext } from "./apply.js";
export { runOnView } from "./engine/touch-recorder.js";
export { runQueued } from "./engine/view-runs.js";
export { current } from "./current.js";
export type { Draft, Immutable } from "immer";
export type {
  SynchronizerOf,
  StateSynchronizer,
  CreateSynchronizerOptions,
  SyncStatus,
  SyncStats,
  SyncEvents,
  UpdateOptions,
  UpdateResult,
  UnconditionalResult,
  Recipe,
  CompactionResult,
  QueuedPromise,
  SubscribeOptions,
  UpgradeOptions,
} from "./synchronizer-types.js";
export type { SyncRecipe } from "./type-checks.js";
export type { CompactionOptions } from "./compaction-policy.js";
export type { HistoryEntry, HistoryOptions } from "./history.js";
export { rebuildStateAt } from "./history.js";
/** Model chains (docs/versions.md): the model an entry puts the log at, a state migrated up. */
export { logModelOf, migrateUp } from "./versions.js";
export { EntryVerdicts, type EntryVerdict, type ReplayStop } from "./entry-verdicts.js";
export { createSynchronizer } from "./synchronizer.js";
/** Whether a log went back under a position (a revision and its entry's message id). */
export { logWentBack } from "./engine/log-changes.js";
export {
  DEFAULT_PING_INTERVAL_MS,
  keepConnecting,
  type BackgroundConnection,
} from "./keep-connecting.js";
export { connectFailure, redactServer, serversText } from "./connect-failure.js";
export {
  checkConnectInBackground,
  checkNatsConnectOptions,
  connectOptionsSchema,
  natsConnectOptionsSchema,
} from "./nats-connect-options.js";
export * from "./jetstream/index.js";
export {
  openJetStreamSynchronizer,
  jetStreamSnapshotKey,
  splitLayoutOptions,
  type JetStreamLayoutOptions,
  type OpenJetStreamOptions,
} from "./open-jetstream.js";
export {
  isConnectionLike,
  jetStreamModuleSchema,
  openJetStreamOptionsSchema,
  optionsRefused,
  runtimeOpenOptionsSchema,
  snapshotsOptionSchema,
} from "./open-jetstream-options.js";
