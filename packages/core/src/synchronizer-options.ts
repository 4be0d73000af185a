/**
 * The options of `createSynchronizer` (split from synchronizer-types.ts, which re-exports them).
 */
import type { CompactionOptions } from "./compaction-policy.js";
import type { StateSyncError } from "./errors.js";
import type { RevisionedLog } from "./log.js";
import type { CommandMap, Model } from "./model.js";
import type { SnapshotStore } from "./snapshot-store.js";
import type { PendingQueueSetup } from "./pending/pending-queue.js";
import type { SyncEvents } from "./synchronizer-types.js";

/** Options of {@link createSynchronizer}. */
export interface CreateSynchronizerOptions<S, C extends CommandMap<S>> {
  /** The log to run on. Not closed by `close()` unless `ownsLog`. */
  log: RevisionedLog;
  /** The model (see `defineModel`). */
  model: Model<S, C>;
  /** Where to persist the replica; none by default. */
  snapshots?: SnapshotStore | false | undefined;
  /** Key of this state in the snapshot store. Default: `model.name`. */
  snapshotKey?: string;
  /**
   * Save a snapshot after this many consumed entries (default 100; 0 = only on close). Automatic
   * saves start at most every 250 ms, or every ten times the last save's duration if longer (a
   * large state is saved less often).
   */
  snapshotEvery?: number;
  /** Client id stored in entries (1-64 printable ASCII characters, no spaces). Default: random. */
  clientId?: string;
  /** Keep following the log after catching up. Default true. */
  live?: boolean;
  /**
   * When the returned promise resolves: `"synced"` (default) once caught up with the log, or with
   * the stored state and status `offline` when the log is unreachable; `"restored"` right after
   * the local snapshot (if any) is restored.
   */
  waitFor?: "synced" | "restored";
  /** Listens to `"error"` from the start, so problems found while opening are seen too. */
  onError?: SyncEvents["error"];
  /** Listens to `"status"` from the start. */
  onStatus?: SyncEvents["status"];
  /**
   * Automatic compaction (on by default): after so many entries or bytes since the last snapshot
   * entry, randomised per client; the default thresholds grow with the state's size (see
   * `CompactionOptions`). A state larger than one entry is compacted as a chunked snapshot
   * (docs/format.md). `false` turns it off.
   */
  compaction?: CompactionOptions | false;
  /**
   * How conflicting writers share the log. `"retry"` (default): after a conflict the replica
   * catches up and retries at once; after another, a live replica retries as soon as the next
   * entry arrives, or after a full-jitter exponential backoff when none comes. A writer (or a
   * compaction) that conflicts three times in a row appends an `intent` entry (a no-op), and
   * every other writer holds its appends back until that writer's next entry arrives, in log
   * order: no writer starves, whatever the event-loop order of replicas sharing a process. The
   * hold is bounded whatever others append: an update holds back for intents at most 1 s in
   * all, and a writer whose intents go on for 3 s without another entry of its own is ignored
   * until it appends one. `"turns"`: in addition, while others write, live writers take turns of 8 entries
   * round-robin, at the price of latency that grows with the number of writers. See
   * `engine/contention.ts` and the README's performance section.
   */
  contention?: "retry" | "turns";
  /**
   * Whether unconditional commands in flight together share appends (default `true`): while 4
   * appends of commands travel, further ones go together in one `commands` entry (format 4,
   * docs/format.md). `false` sends each alone, as a format-3 `command` entry: for a rolling
   * upgrade while replicas of an SDK before format 4 still read the log (they stop before a
   * `commands` entry).
   */
  groupCommands?: boolean;
  /**
   * When a replica of a newer model version switches a log at an older version
   * (docs/versions.md): `"on-open"` (default) once it has caught up after opening, whatever
   * `waitFor` says (offline at open: when it reaches the log), and before it first appends;
   * `"manual"` only when `upgrade()` is called (until then it reads the log's state migrated up,
   * and its appends fail with `UPGRADE_PENDING`). Older-version replicas stop at the switch with
   * `MODEL_UPGRADED`, so pick `"manual"` to choose the moment in a rolling deploy.
   */
  upgrade?: "on-open" | "manual";
  /**
   * For runtime packages that connect in the background: subscribes the replica to the
   * connection's errors (see `BackgroundConnection.errors`), each reported as an `"error"` event
   * until the connection is made. Returns an unsubscribe function, called by `close()`.
   */
  connectionErrors?: (report: (error: StateSyncError) => void) => () => void;
  /**
   * Mean time between periodic checks of the log's configuration while connected, ms (jittered
   * by a third either way; default 45,000; 0: none). The log is also checked after each
   * (re)connection and, when the log sends change notices (`RevisionedLog.watchConfig`;
   * JetStream: the stream-update advisory, if the user may subscribe to it), within 0-2 s of
   * each notice; while notices work, the periodic check runs 10 times less often (7.5 min by
   * default). A configuration that can drop history (an operator set `max_msgs`, `max_age`,
   * ...) is reported as a `STREAM_CONFIG` `"error"` event, once per distinct problem.
   */
  streamCheckIntervalMs?: number;
  /**
   * The offline queue (docs/offline.md): updates are queued (named commands stored in `store`
   * first), shown at once in `optimisticState`, and pushed in order, exactly once, whenever the
   * log can be reached; a queued update waits as long as it takes (no `outcomeTimeoutMs`
   * failure, no `RETRY_LIMIT`). Entries of queued updates carry their identity and are written
   * in format 2 (older SDKs stop before them). Default: none (updates are sent at once).
   */
  pending?: PendingQueueSetup | false | undefined;
  /** Close the log in `close()`. Default false. */
  ownsLog?: boolean;
  /** Extra work for `close()`, after the log is released (runtime packages close connections). */
  onClose?: () => Promise<void>;
}
