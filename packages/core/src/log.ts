/**
 * The log port: an append-only sequence of opaque entries with revisions, after Pravega's
 * `RevisionedStreamClient`. The engine never sees NATS; `MemoryLog` and `JetStreamLog` implement
 * this and both pass `runRevisionedLogConformance` from `@statesync/core/testing`.
 *
 * Revisions are positive integers that only grow (JetStream stream sequences). A log holds the
 * entries of one state. In a *contiguous* log (a state that owns its stream) every revision
 * between the first and the latest belongs to the state; in a non-contiguous log (many states in
 * one stream, one subject each) revisions of one state have gaps.
 */

import type { StateSyncError } from "./errors.js";

/** One stored entry. */
export interface LogEntry {
  /** Revision of this entry (the stream sequence), >= 1. */
  readonly revision: number;
  /** The bytes as stored. */
  readonly data: Uint8Array;
  /** The message id the writer gave it (JetStream `Nats-Msg-Id`), if any. */
  readonly messageId?: string | undefined;
  /**
   * A revision the log assigned and holds no entry at, which no truncation or deletion explains
   * (`data` is empty): every replica steps over it with a `SKIPPED_SEQUENCE` event. JetStream:
   * a sequence nats-server 2.9 used up for a publish its resource limits refused.
   */
  readonly skipped?: true;
}

/** Where the log stands. */
export interface LogInfo {
  /**
   * Opaque identity of the log; changes when the log is deleted and recreated, so a snapshot
   * of an older incarnation can be told apart. JetStream: stream name, key and creation time.
   */
  readonly identity: string;
  /** Revision of the first retained entry of this state; 0 when it holds none. */
  readonly firstRevision: number;
  /** Revision of the last entry of this state; 0 when it never held one. */
  readonly latestRevision: number;
  /**
   * In a non-contiguous log, the revision of its last entry of any state (JetStream: the shared
   * stream's last sequence); absent: `latestRevision`. How `waitFor` tells a revision another
   * state wrote from one not written yet.
   */
  readonly logPosition?: number;
  /** Largest entry the log accepts, in bytes of `data` (message ids and headers excluded). */
  readonly maxEntryBytes: number;
  /**
   * True when the log refuses `truncateBefore` for as long as its configuration stays
   * (JetStream: a `deny_purge` stream); compaction then refuses before writing its snapshot.
   */
  readonly truncationDenied?: boolean;
}

/** The result of a successful append. */
export interface AppendResult {
  /** Revision the entry was stored at. */
  readonly revision: number;
  /** True when the log already held an entry with this message id (a re-send) and stored nothing. */
  readonly duplicate: boolean;
}

/**
 * Limits of one append attempt (issue 10, case 6: the caller's `outcomeTimeoutMs` and `signal`
 * bound the attempt in flight, not only the re-sends between attempts).
 */
export interface AppendOptions {
  /**
   * Stop waiting for the log's answer after this many ms (never longer than the log's own
   * request timeout). The attempt's outcome is then unknown: `UNAVAILABLE`.
   */
  readonly timeoutMs?: number | undefined;
  /**
   * Stop waiting when it aborts: `UNAVAILABLE` with `details.aborted: true`; the outcome is
   * unknown unless `details.notSent` says nothing was sent.
   */
  readonly signal?: AbortSignal | undefined;
}

/** Receives entries from {@link RevisionedLog.follow}, in revision order, each once. */
export interface LogFollowHandler {
  onEntry(entry: LogEntry): void;
  /** A failure the follower cannot recover from by itself (permission denied, log deleted). */
  onError?(error: unknown): void;
  /**
   * Optional: the revision the receiver already has from elsewhere (its own range reads). A
   * follower may then skip entries up to it instead of reading them again (the fan-out follower
   * does, docs/fanout.md); entries it delivers are still in order.
   */
  revision?(): number;
}

/** A running follow; `stop()` ends it and resolves when no more entries will be delivered. */
export interface LogFollower {
  stop(): Promise<void>;
}

/**
 * Receives notices from {@link RevisionedLog.watchConfig}. Both callbacks may run at any time
 * until the watch is stopped; neither may throw.
 */
export interface LogConfigWatcher {
  /**
   * The log's configuration may have changed (JetStream: the stream-update advisory arrived):
   * check it with `info()`. A notice carries no verdict: `info()` decides.
   */
  onChange(): void;
  /**
   * The log cannot send notices after all (JetStream: the server denied the subscription to
   * the advisory subject): poll instead. Called at most once per watch, and never after the
   * watch is stopped.
   */
  onUnavailable(error: unknown): void;
}

/**
 * Connection state of the log, for the synchronizer's `status`: `online`; `offline` while the
 * log cannot reach its backend and tries again by itself; `closed` once its connection ended for
 * good (JetStream: nats.js closed the connection, after its `maxReconnectAttempts` or an
 * `nc.close()`). `closed` is final: no other status follows it, and every call of the log then
 * throws `CONNECTION_CLOSED`.
 */
export type LogConnectionStatus = "online" | "offline" | "closed";

/**
 * Receives the log's connection status changes. With `closed`, `error` is the
 * `CONNECTION_CLOSED` error the log's calls throw from then on (why it closed, as `cause`).
 */
export type LogStatusListener = (status: LogConnectionStatus, error?: StateSyncError) => void;

/**
 * The revisioned log a `StateSynchronizer` runs on.
 *
 * Errors: every method throws `StateSyncError`s: `CONFLICT` ({@link AppendConflictError}) from a
 * conditional append, `UNAVAILABLE` when the log cannot be reached (for an append: the outcome is
 * unknown, re-send the same bytes with the same message id; `details.notSent: true` when the
 * log knows nothing was sent, e.g. while disconnected; `details.disconnected: true` when the
 * connection was lost while the call was in flight: it ends at once rather than at its timeout,
 * its outcome unknown, never with `notSent`; `details.persistent: true` when the log is
 * connected but says it cannot serve until its setup changes, e.g. JetStream not reachable in
 * the account or domain: the engine reports such an error, and keeps trying), `PERMISSION_DENIED`,
 * `PAYLOAD_TOO_LARGE` (before sending), `CONNECTION_CLOSED` once {@link status} is `closed`
 * (`details.notSent: true` when the log knows nothing was sent; an append in flight when the
 * connection closed has an unknown outcome), `CLOSED` after `close()`.
 */
export interface RevisionedLog {
  /**
   * True when every revision between the first and the latest belongs to this state (own-stream
   * layout), so the entry after revision r must be r + 1.
   */
  readonly contiguous: boolean;

  /**
   * The part of `info().identity` before its last `@`, when the log knows it without asking the
   * server (JetStream: `jetstream:<stream>:<subject>`): a local snapshot written for another log
   * is refused at once, not served until the log answers. Optional.
   */
  readonly identityPrefix?: string;

  /** Current identity, bounds and limits. */
  info(): Promise<LogInfo>;

  /**
   * Stores `data` only if the latest revision of this state is `expectedRevision` (0: the state
   * has no entry). JetStream: `Nats-Expected-Last-Sequence` (own stream) or
   * `Nats-Expected-Last-Subject-Sequence` (shared stream). A known `messageId` within the
   * duplicate window stores nothing and answers the original revision with `duplicate: true`.
   * Throws {@link AppendConflictError} on a mismatch.
   */
  appendConditional(
    data: Uint8Array,
    expectedRevision: number,
    messageId: string,
    options?: AppendOptions,
  ): Promise<AppendResult>;

  /** Stores `data` at the tail without a check; deduplicated by `messageId` like the above. */
  appendUnconditional(
    data: Uint8Array,
    messageId: string,
    options?: AppendOptions,
  ): Promise<AppendResult>;

  /**
   * The retained entries of this state with `fromRevision <= revision <= toRevision`, ascending.
   * Entries truncated away are silently missing (callers check continuity themselves). With
   * `toRevision` = `Infinity` (to the log's end) a read never misses the entry a truncation
   * kept: when one overtakes it (a compaction's snapshot entry appended after the read began,
   * everything before it removed), the read still yields the first entry retained after those
   * it lost, so it comes back empty only when the log retains nothing at or after
   * `fromRevision`. (JetStream: a range read takes its end from stream info first; the engine's
   * catch-ups and the CLI's first-entry check rely on this: a new user's trial.)
   */
  read(fromRevision: number, toRevision: number): AsyncIterable<LogEntry>;

  /**
   * Delivers every entry with revision >= `fromRevision` as it is stored, in order, surviving
   * reconnects, until stopped.
   */
  follow(fromRevision: number, handler: LogFollowHandler): LogFollower;

  /** The entry at exactly `revision`, or undefined when this state has none there. */
  entryAt(revision: number): Promise<LogEntry | undefined>;

  /**
   * True when the log holds an entry of another state at exactly `revision` (JetStream: a shared
   * stream's message on another subject), false when it holds none there or cannot tell. What
   * `entryAt`'s undefined leaves open: an append answered with that revision is then surely not
   * this state's. Optional.
   */
  otherStateAt?(revision: number): Promise<boolean>;

  /**
   * The revision of the entry with `messageId` among the first `scan` entries of this state after
   * `afterRevision` (default 1: the entry right after), or undefined. Used to resolve an append
   * whose acknowledgement was lost once the server no longer deduplicates it.
   */
  findByMessageId(
    messageId: string,
    afterRevision: number,
    scan?: number,
  ): Promise<number | undefined>;

  /** Removes the entries of this state with revision < `revision` (compaction). */
  truncateBefore(revision: number): Promise<void>;

  /**
   * Optional: tells `watcher` when the log's configuration may have changed (an operator edited
   * its limits), so that a replica need not poll `info()` often (issue 10, case 5). Returns a
   * function that stops the watch (idempotent). A log without it, or whose watch reports
   * `onUnavailable`, is polled. JetStream: a subscription to the stream-update advisory
   * (`$JS.EVENT.ADVISORY.STREAM.UPDATED.<stream>`), which the server publishes on every update
   * of the stream's configuration; notices sent while the connection is down are lost, so a
   * replica checks after every reconnection anyway.
   */
  watchConfig?(watcher: LogConfigWatcher): () => void;

  /**
   * Optional: warnings, things the log does otherwise than it was asked, or a risk it takes,
   * without failing a call (JetStream: `fanout: { enable: true }` on a server that refuses to
   * add the republish rule, so live followers use consumers, docs/fanout.md; a stream without
   * `deny_delete`, which one deleted message breaks). Each warning is given once; a listener
   * added later hears the ones given already. Returns an unsubscribe function. The engine
   * reports each as an `"error"` event.
   */
  watchWarnings?(listener: (warning: StateSyncError) => void): () => void;

  /**
   * Subscribes to connection status changes; returns an unsubscribe function. A listener added
   * once the status is `closed` hears nothing (read {@link status}). `online` heard while the
   * status was `online` already says the connection was replaced without an outage the replica
   * saw (a tabs' handover of the lead, `TabLog`): the engine checks the log again as after a
   * reconnection (the log may have gone back meanwhile), without saying `offline`.
   */
  watchStatus(listener: LogStatusListener): () => void;

  /** Current connection status. */
  readonly status: LogConnectionStatus;

  /** Releases the log's resources (not a connection it was given). Idempotent. */
  close(): Promise<void>;
}
