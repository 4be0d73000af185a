import type { Draft, Immutable } from "immer";
import type { StateSyncError } from "./errors.js";
import type { HistoryEntry, HistoryOptions } from "./history.js";
import type { CommandArgs, CommandMap, Model, UpdateContext } from "./model.js";
import type { StateTypeCheck, SyncRecipe } from "./type-checks.js";
import type { PendingUpdate, QueuedInfo } from "./pending/pending-op.js";
import type { PendingApi } from "./pending/pending-api.js";

/**
 * Where a replica stands:
 * - `connecting`: not yet in touch with the log since it was opened;
 * - `live`: in touch with the log (and following it when `live` is on);
 * - `offline`: the log cannot be reached; reads serve the last state, the replica keeps trying;
 * - `stalled`: stopped at its last good revision (unknown command, newer format, truncated log,
 *   model mismatch, a log that was replaced, a log connection closed for good:
 *   `CONNECTION_CLOSED`); reads serve that state, updates reject with the stall error
 *   ({@link StateSynchronizer.stallReason});
 * - `closed`: `close()` was called.
 */
export type SyncStatus = "connecting" | "live" | "offline" | "stalled" | "closed";

/** Options of one `update` / `updateUnconditionally` call. */
export interface UpdateOptions {
  /** Attempts before `RETRY_LIMIT` (conditional updates only). Default 64. */
  maxAttempts?: number;
  /**
   * Ends the update at once while nothing of it was sent: in the local queue, waiting for the
   * log, held back by other writers (intents, turns), between attempts (rejects with
   * `ABORTED`). Once an append may have reached the log, aborting its re-sends rejects with
   * `UNKNOWN_OUTCOME` instead: it may or may not be stored.
   */
  signal?: AbortSignal;
  /**
   * How long, in ms from the call, the update may take to reach the log: its waits (in the
   * local queue, for the log, behind other writers) and the re-sends of an append whose outcome
   * is unknown (lost acknowledgement, server gone). Past it, the call rejects with
   * `UNKNOWN_OUTCOME` when an append may have been stored, else with `UNAVAILABLE`
   * (`details: { notSent: true, timedOut: true, waitedMs, outcomeTimeoutMs }`: nothing was
   * appended). Default 30,000; keep it well below the stream's
   * duplicate window (2 minutes by default).
   */
  outcomeTimeoutMs?: number;
}

/** What a committed conditional update resolves to. */
export interface UpdateResult<S, R = void> {
  /** Revision of the entry (or the revision the replica was at when nothing changed). */
  readonly revision: number;
  /** The replica's state right after applying the entry. */
  readonly state: Immutable<S>;
  /**
   * What the recipe returned. A returned draft, or part of one, comes back finalized: deeply
   * frozen, and the state object itself when the recipe changed nothing. Queued updates of one
   * client may share one entry, and so one revision.
   */
  readonly result: R;
  /** Attempts it took (1 when there was no conflict). */
  readonly attempts: number;
}

/** What a committed unconditional update resolves to. */
export interface UnconditionalResult {
  /** Revision of the entry (commands sent together share one: see `updateUnconditionally`). */
  readonly revision: number;
  /**
   * `false` when the call resolved before this replica applied the entry: its `outcomeTimeoutMs`
   * or `signal` ended, or the replica closed or stopped, while it waited for the entry after the
   * log stored it (the server went away right after its acknowledgement). The entry is stored at
   * `revision` all the same; `waitFor(revision)` says when it is applied here. Also `false` when
   * this replica reached a later state without applying the entry (it was behind, and another
   * replica's compaction truncated the log before a snapshot entry past it, or an operator
   * purged a shared stream's key, which started again from a genesis entry): whether the
   * command was a no-op is then not known here. Absent otherwise.
   */
  readonly applied?: false;
}

/**
 * What `update` and `updateUnconditionally` return: the promise of the outcome (committed, or
 * rejected when refused), and `queued`, which resolves once the update is safely queued (a
 * named command stored in the pending store, docs/offline.md) and says whether durably; it
 * rejects `QUEUE_FAILED` (then so does the outcome) when it could not be stored before it was
 * sent. One sent already (its record was late, docs/offline.md "Tabs") whose write then fails
 * resolves `{ durable: false }` instead (a `QUEUE_FAILED` event): the log decides its outcome.
 */
export type QueuedPromise<T> = Promise<T> & { readonly queued: Promise<QueuedInfo> };

/** Options of `subscribe`. */
export interface SubscribeOptions {
  /**
   * `true`: the listener sees the optimistic view (`optimisticState`: the confirmed state with the
   * pending updates applied on top) after every change of it, including updates queued; default
   * `false`: the confirmed state after each batch of applied entries.
   */
  optimistic?: boolean;
}

/** Options of `upgrade`. */
export interface UpgradeOptions {
  /**
   * `true`: catch up and run every check of the switch (its migration, the entry's nesting depth
   * and size against the log's limit, its format), writing nothing: resolves with the revision
   * the switch entry would be based on, or rejects as the switch would (the message ends "dry
   * run: nothing was written", `details.dryRun`), leaving the replica writable. Not checked: the
   * permission to append.
   */
  dryRun?: boolean;
}

/** A recipe: mutates the draft; its return value becomes `result`. Must be synchronous. */
export type Recipe<S, R> = (draft: Draft<S>, ctx: UpdateContext) => R;

/**
 * Counters since the synchronizer was created, each starting at 0 (README, "`stats`"). Counts
 * only: no field is a time.
 */
export interface SyncStats {
  /** Entries read from the log past the replica's revision (catch-up and follow), of any kind. */
  entriesFetched: number;
  /**
   * `update`, `command` and `commands` entries applied, including no-ops (a command that threw
   * or whose arguments fail their schema, a re-sent queued update already applied).
   */
  entriesApplied: number;
  /**
   * Entries every replica skips: malformed or on a stale base (`CORRUPT_ENTRY`), an older
   * version's command after a switch (`OUTDATED_COMMAND`), a used-up sequence (`SKIPPED_SEQUENCE`).
   */
  entriesSkipped: number;
  /** Bytes of the entries `entriesFetched` counts, as stored. */
  bytesFetched: number;
  /** Entries this replica stored (conditional and unconditional; not a log's genesis entry). */
  appends: number;
  /** Conditional appends rejected because the log had moved on (an unconditional re-send too). */
  conflicts: number;
  /** Conditional append attempts made (committed or not; an unconditional re-send too). */
  attempts: number;
  /**
   * Re-sends decided for an append whose acknowledgement was lost or that could not be sent
   * (counted before the wait that precedes each; an abort during that wait cancels it).
   */
  resends: number;
  /** Local snapshots the store finished saving (automatic, `saveSnapshot()`, at `close()`). */
  snapshotsSaved: number;
  /**
   * 1 when the replica opened from its local snapshot, back to 0 when the log showed that
   * snapshot stale (discarded); else 0.
   */
  snapshotsRestored: number;
  /** Compactions this client completed. */
  compactions: number;
}

/** What `compact()` resolves to. */
export interface CompactionResult {
  /** Revision of the snapshot entry the log now starts at. */
  readonly revision: number;
}

/** Events of {@link StateSynchronizer.on}. */
export interface SyncEvents {
  /** Problems that reject no call: a skipped entry, a listener that threw, a stall, a warning. */
  error: (error: StateSyncError) => void;
  /** Status changes. */
  status: (status: SyncStatus) => void;
  /**
   * Changes of {@link StateSynchronizer.writable}, each announced once, with the error that made
   * it false (undefined when it becomes true).
   */
  writable: (writable: boolean, error: StateSyncError | undefined) => void;
  /**
   * A pending update was refused when it was pushed (`UPDATE_REFUSED`, the reason in `cause`)
   * and dropped from the queue; its caller, if still there, got the same error.
   */
  refused: (error: StateSyncError, update: PendingUpdate) => void;
  /** The pending queue became empty: every update was committed, refused or discarded. */
  drained: () => void;
}

/**
 * A replica of one shared state (after Pravega's `StateSynchronizer`). Every replica applies the
 * same entries in log order to the same initial state, so all converge.
 *
 * `S` is the state type and `C` the commands; for a model's replica write
 * `SynchronizerOf<typeof model>` (`StateSynchronizer<typeof model>` is a type error saying so).
 */
export interface StateSynchronizer<
  S,
  C extends CommandMap<S> = CommandMap<S>,
> extends PendingApi<S> {
  /**
   * Never present: a type-level check that turns `StateSynchronizer<typeof model>` (a model
   * where the state type belongs) into a short type error. Write `SynchronizerOf<typeof model>`.
   */
  readonly "~stateType"?: StateTypeCheck<S>;
  /** The current state: immutable (deeply frozen). */
  readonly state: Immutable<S>;
  /** Revision of the last entry consumed (applied or skipped); 0 = nothing consumed. */
  readonly revision: number;
  /** See {@link SyncStatus}. */
  readonly status: SyncStatus;
  /** Counters a user and a test can read. */
  readonly stats: Readonly<SyncStats>;
  /** This client's id (stored in each entry it writes). */
  readonly clientId: string;
  /** The model the replica runs. */
  readonly model: Model<S, C>;
  /** The error that stalled the replica, if it is stalled. */
  readonly stallReason: StateSyncError | undefined;
  /**
   * Whether this replica's writes can succeed, as far as it knows; `status` keeps its meaning
   * (a replica may be `live`, following the log, and not writable). False after a write failure
   * that will repeat: a denied append (`PERMISSION_DENIED`: a read-only user), a log that is gone
   * (`LOG_REPLACED`) or whose connection closed for good (`CONNECTION_CLOSED`), a stream
   * configuration or server the log refuses (`STREAM_CONFIG`, `UNSUPPORTED_SERVER`), a log whose
   * first entry could not be written or read (`UNAVAILABLE`); also while the configuration check
   * finds the stream refused (`STREAM_CONFIG`, before any write; true again once it finds it
   * usable); and for good once `stalled` or `closed`. True again after an append succeeds, or
   * after a (re)connection that stands on the log, except after a denial (only a successful
   * append shows a permission was granted). True at first: it is learned from writing (and from
   * that check), so a replica that never wrote does not know it may not. Changes come as
   * `"writable"` events.
   */
  readonly writable: boolean;
  /** The error that made {@link writable} false; undefined while writable. */
  readonly writeError: StateSyncError | undefined;

  /** Reads and applies everything appended after `revision`; resolves to the new revision. */
  fetchUpdates(): Promise<number>;
  /**
   * Resolves once `revision` has been consumed. Rejects `CLOSED`, `ABORTED` or the stall error;
   * `VALIDATION` (before anything starts) for a revision that is not a non-negative integer or
   * options that are not `{ signal? }` with an `AbortSignal` (`null`, an unknown key). In a shared
   * stream, a revision another key wrote counts as reached once this replica holds its key's last
   * entry before it (`LogInfo.logPosition`).
   */
  waitFor(revision: number, options?: { signal?: AbortSignal }): Promise<void>;
  /**
   * Resolves to the revision once the replica has caught up with the log's latest revision;
   * while the log is unreachable it keeps trying until `signal` aborts (`ABORTED`). Rejects with
   * the stall error once the replica stalls (`CONNECTION_CLOSED` when the log's connection
   * closed for good), `CLOSED` on `close()`; `VALIDATION` (before the catch-up starts) for
   * options that are not `{ signal? }` with an `AbortSignal` (`null`, an unknown key).
   */
  synced(options?: { signal?: AbortSignal }): Promise<number>;

  /**
   * Conditional update with a recipe. Runs it on the current state; appends its Immer patches
   * only if the log is still at `revision`; on conflict catches up and runs it again (backoff with
   * jitter). A recipe that changes nothing appends nothing; the replica then checks the log's
   * latest revision and, when the log has moved on, catches up and runs the recipe again, so
   * `result` is computed at the log's latest revision. Throws `VALIDATION` (async recipe,
   * invalid result state), `RETRY_LIMIT`, `PAYLOAD_TOO_LARGE`, `PERMISSION_DENIED`,
   * `UNKNOWN_OUTCOME`, `UNAVAILABLE`, `ABORTED`, `CLOSED`, or what the recipe threw (unchanged).
   */
  update<R>(recipe: SyncRecipe<S, R>, options?: UpdateOptions): QueuedPromise<UpdateResult<S, R>>;
  /** Conditional update with a named command; `args` are validated by its schema first. */
  update<K extends keyof C & string>(
    command: K,
    args: CommandArgs<C[K]>,
    options?: UpdateOptions,
  ): QueuedPromise<UpdateResult<S, void>>;

  /**
   * Appends the command at the tail; resolves once stored and consumed here, or once stored when
   * its `outcomeTimeoutMs` or `signal` ends first (`applied: false`). Every replica runs its
   * recipe and keeps the result only if it passes the schema (docs/format.md, "Format 3"). Throws
   * `VALIDATION`, `UNKNOWN_COMMAND`, `PAYLOAD_TOO_LARGE`, `PERMISSION_DENIED`, `UNKNOWN_OUTCOME`,
   * `CLOSED`; `COMMAND_FAILED` (`details.committed`, `revision`, `reason`) for a no-op entry.
   *
   * Commands this replica has in flight together share appends: while 4 appends of commands
   * travel, further calls without a `signal` wait for one of them and go together, up to 128, in
   * call order, as one `commands` entry (docs/format.md, "Format 4"). Each is applied and
   * checked on its own (one that fails is `COMMAND_FAILED` with `details.index`, the others
   * apply); they share the entry's `revision`. An awaited command, or one with a `signal`, goes
   * alone, as before.
   */
  updateUnconditionally<K extends keyof C & string>(
    command: K,
    args: CommandArgs<C[K]>,
    options?: UpdateOptions,
  ): QueuedPromise<UnconditionalResult>;

  /**
   * `(state, revision)` after each batch of applied entries (not on subscribe); with
   * `{ optimistic: true }`, `(optimisticState, revision)` after each change of the optimistic view.
   * Throws `VALIDATION` when `listener` is not a function or `options` is not
   * `{ optimistic?: boolean }` (`null`, an unknown key such as `optimistc`). After `close()` it is
   * accepted and the listener is never called (not `CLOSED`: a UI that renders a closed replica,
   * React's `useSyncExternalStore` among them, subscribes again without knowing; `status` says
   * `closed`).
   */
  subscribe(
    listener: (state: Immutable<S>, revision: number) => void,
    options?: SubscribeOptions,
  ): () => void;

  /**
   * Listens to an event; returns an unsubscribe function. The `closed` status is the last event:
   * none follows it, and no `subscribe` listener is called after it. After `close()` it is
   * accepted and calls nothing (as `subscribe`: a UI showing a closed replica listens again).
   */
  on<E extends keyof SyncEvents>(event: E, listener: SyncEvents[E]): () => void;

  /**
   * Compaction: appends the state as a snapshot entry (conditionally, at the current revision),
   * then truncates the history before it. A crash between the two loses nothing. Throws
   * `PAYLOAD_TOO_LARGE` before any I/O when the state does not fit one entry (the history stays),
   * `RETRY_LIMIT` when other writers won 100 races in a row (the history stays; try later),
   * `PERMISSION_DENIED` without purge permission, and what `update` throws.
   */
  compact(): Promise<CompactionResult>;

  /**
   * Switches the log to this model's version when it is at an older one (docs/versions.md): a
   * `switch` entry carrying the state migrated through the model's `migrate` functions, appended
   * conditionally, so it is written once however many replicas call this together. Resolves with
   * the revision of the switch entry (this replica's or another's), or the current revision when
   * the log is already at this version. With `upgrade: "on-open"` (the default) replicas do this
   * when they open and before they first append. Throws `VALIDATION` when a `migrate` fails or
   * the state nests too deep for an entry, `PAYLOAD_TOO_LARGE` when the switch entry is larger
   * than the log accepts, `RETRY_LIMIT` after 100 lost races, `PERMISSION_DENIED` for a reader,
   * and what `update` throws. `{ dryRun: true }` writes nothing (see {@link UpgradeOptions}).
   */
  upgrade(options?: UpgradeOptions): Promise<{ readonly revision: number }>;

  /**
   * Whether the log is at an older version of this model (it has not switched yet): reads show
   * the log's state migrated up; appends switch it first (or, with `upgrade: "manual"`, fail with
   * `UPGRADE_PENDING`).
   */
  readonly upgradePending: boolean;
  /**
   * The retained entries in `[from, to]` (revision, time, kind, command and args, client). Throws
   * `VALIDATION` for options that are not `{ from?, to? }` (`null`, an unknown key such as
   * `form`), a bound that is not a non-negative integer, or `from` after `to`.
   */
  history(options?: HistoryOptions): Promise<HistoryEntry[]>;
  /**
   * Rebuilds the state at a retained revision by replaying the log from its first entry; 0 is the
   * model's initial state. A revision among the parts of a chunked snapshot the log starts with
   * reads on to its snapshot entry (docs/format.md). Throws `VALIDATION` for a revision that is
   * not a non-negative integer (`undefined` included) or past the latest, `TRUNCATED` for one
   * before the retained history, or among parts no valid snapshot entry completes.
   */
  stateAt(revision: number): Promise<Immutable<S>>;

  /**
   * Writes the local snapshot now (no-op without a snapshot store). Throws `SNAPSHOT_FAILED` when
   * the store cannot write (also reported as an `"error"` event), `CLOSED` after `close()`, and
   * the stall error `MODEL_UPGRADED` once the log switched past this model (a replica stopped so
   * writes no snapshot, docs/versions.md).
   *
   * Never waits for the store without end: when it has not answered within 10 s (another tab
   * holding the IndexedDB database, a hung disk) the call throws `SNAPSHOT_FAILED` with
   * `details: { timedOut: true, timeoutMs }` (one `"error"` event); the write may still land
   * later. A save queued behind it throws the same once the wait is over. Until the store
   * answers that write, saves are not sent to it (it would only queue them behind the one that
   * hangs) and throw at once, `details: { timedOut: true, timeoutMs, skipped: true }`, with no
   * further event. Once it answers, the replica saves its current state by itself (unless it
   * is closed) and saves work as before.
   */
  saveSnapshot(): Promise<void>;
  /**
   * Writes the snapshot, stops following, waits until the pending queue's writes are stored,
   * releases what it owns; later calls reject `CLOSED`. Updates already sent to the log
   * (conditional or not) are waited for and resolve with their outcome; those still queued
   * reject `CLOSED` (nothing stored), and so do those still waiting for the log to be opened or
   * caught up with, `synced()` and `fetchUpdates()`: at once, without waiting for a log that does
   * not answer (a stopped server) until its request timeout. `history()` and `stateAt()` in
   * flight reject `CLOSED` at once as well; their read stops at its next entry, and a log the
   * replica owns (`openSynchronizer`'s) ends it at once when it is closed, before the connection
   * the replica owns is closed (nats.js is not left pulling on a closed connection). Pending
   * updates stay queued (their callers reject `CLOSED` with `details.queued`). Calling it again
   * returns the first call's promise. A closed replica serves its last state; every call that
   * would read the log, write, or change the pending queue rejects `CLOSED`.
   *
   * What `close()` itself may still wait for, at most one request timeout (`requestTimeoutMs`),
   * against a server that stopped answering: an append already sent (its outcome), and the live
   * follower's consumer creation if one is in flight (right after opening, or after a
   * reconnection): nats.js cannot cancel it, and a connection closed under it makes nats.js
   * retry it on a timer that keeps the process alive for minutes. With the server answering,
   * it also waits (at most 2 s) for the follower's consumer to be deleted; not while the
   * connection is down (the server drops it once idle). nats.js's wait between reconnection
   * attempts (`reconnectTimeWait`, 2 s by default) is not cancelled by closing: a process whose
   * server was gone may exit that much after `close()` resolved.
   */
  close(): Promise<void>;
}

/**
 * The synchronizer type of a model: `SynchronizerOf<typeof myModel>` is `StateSynchronizer<S, C>`
 * with the model's state type and commands (what `createSynchronizer` and `openSynchronizer`
 * resolve to for that model).
 */
export type SynchronizerOf<M> = M extends Model<infer S, infer C> ? StateSynchronizer<S, C> : never;

export type { CreateSynchronizerOptions } from "./synchronizer-options.js";
