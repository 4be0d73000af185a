/**
 * Typed errors. Every error statesync throws or reports is a {@link StateSyncError} whose `code`
 * is one of the stable strings below; match on `code`, never on `message`.
 */

/** Stable error codes. New codes may be added; existing ones never change meaning. */
export const ERROR_CODES = [
  /** Invalid user input: arguments, options, keys, a recipe result that fails the state schema. */
  "VALIDATION",
  /** A conditional update conflicted `maxAttempts` times in a row. */
  "RETRY_LIMIT",
  /** An entry or snapshot is larger than the log accepts (NATS `max_payload`). Nothing was sent. */
  "PAYLOAD_TOO_LARGE",
  /** A log entry failed envelope validation; it is skipped by every replica alike. */
  "CORRUPT_ENTRY",
  /** An unconditional command this client's model does not know; the replica stops before it. */
  "UNKNOWN_COMMAND",
  /** An entry of a newer wire-format version; the replica stops before it. */
  "UNSUPPORTED_FORMAT",
  /** The server refused an operation for lack of permission (NATS `PERMISSIONS_VIOLATION`). */
  "PERMISSION_DENIED",
  /** The log no longer holds the history this replica needs. */
  "TRUNCATED",
  /** An append may or may not have been stored and the log could not be reached in time to tell. */
  "UNKNOWN_OUTCOME",
  /** The log (server) cannot be reached. */
  "UNAVAILABLE",
  /** The stream's configuration is unsafe (it could drop history) or does not match. */
  "STREAM_CONFIG",
  /**
   * The server cannot give what this client needs: the guarantees the chosen layout needs (its
   * version), or TLS that a `tls://` URL or TLS options require (refused before anything is sent).
   */
  "UNSUPPORTED_SERVER",
  /** The log was created by another model, or by the same model version with another `initial`. */
  "MODEL_MISMATCH",
  /** The synchronizer (or log) was closed. */
  "CLOSED",
  /**
   * The log's connection ended for good and never comes back: nats.js closed it (its
   * `maxReconnectAttempts` ran out, `nc.close()` was called, the server refused it for good) or
   * the connection given as a promise failed. The replica stops (status `stalled`, reads serve
   * its last state, `writable` false); pending `update`s, `synced()` and new calls reject with
   * it. An update that rejects with it appended nothing (one whose append was in flight rejects
   * `UNKNOWN_OUTCOME`; a queued update may still land once, as at any stall); queued updates stay
   * in the pending store for a later open. Open a new replica on a new connection to go on.
   */
  "CONNECTION_CLOSED",
  /** Internal to the log port: a conditional append found the log past the expected revision. */
  "CONFLICT",
  /**
   * A stored snapshot failed validation (checksum, schema, log identity); it is discarded
   * (`details.deleted: true`), or, when the store could not delete it, ignored and left in place
   * (`details.deleted: false, kept: true`; the message says "ignoring" and why). Also reported
   * (`details.kept: true`, no `deleted`) for a snapshot of another model or of a version this
   * model cannot read, which is not used and left in place (docs/versions.md): tell the two apart
   * by `details.deleted`.
   */
  "CORRUPT_SNAPSHOT",
  /** The operation was aborted through an `AbortSignal`. */
  "ABORTED",
  /** A command recipe threw while being applied; the entry is a no-op on every replica. */
  "COMMAND_FAILED",
  /** A `subscribe` or `on` listener threw; reported, never rethrown. */
  "LISTENER_FAILED",
  /**
   * The snapshot store could not save the local snapshot (disk full, no permission, not a
   * directory, storage quota). The state and the log are unaffected; the next save tries again.
   */
  "SNAPSHOT_FAILED",
  /**
   * The log is no longer the one the replica opened: its stream was deleted and created again (a
   * new creation time), or its entry at the replica's revision is another one, or, found at a
   * reconnection, the log went back behind what the replica applied (`details.rewound: true`,
   * `revision`, `latest`: a server that lost acknowledged appends). The replica stops
   * (status `stalled`, reads serve its last state) and never appends to the new log; open a new
   * replica to start on it (issue 10, case 3). Also, without a stall, the `"error"` event (and
   * the callers) of pending updates queued for another log than the one the replica opened
   * (`details.otherLog: true`, `ids`, `queuedFor`, `log`): set aside, kept stored, never pushed
   * until `rebindPending()` (docs/offline.md, "One log").
   */
  "LOG_REPLACED",
  /**
   * The log switched to a newer version of the model than this client runs (`details.needed`).
   * The replica stops before the switch (status `stalled`, reads serve its last state); upgrade
   * the client (docs/versions.md).
   */
  "MODEL_UPGRADED",
  /**
   * An unconditional command written by an older model version landed after the log switched to
   * a newer one (its writer had not seen the switch), and the newer model does not upgrade it:
   * every replica skips it alike (an event, no effect on the state).
   */
  "OUTDATED_COMMAND",
  /**
   * The log is at an older model version and this replica, opened with `upgrade: "manual"`, does
   * not switch it by itself: nothing was appended; call `upgrade()` first (docs/versions.md).
   */
  "UPGRADE_PENDING",
  /**
   * The offline queue of this state and owner is held by another synchronizer (in this process
   * or another one sharing the snapshot directory): nothing was opened (docs/offline.md).
   */
  "QUEUE_LOCKED",
  /**
   * The pending store could not store or remove a pending update (disk full, no permission,
   * storage quota). When `update` rejects with it, the update was not queued.
   */
  "QUEUE_FAILED",
  /**
   * Stored pending updates could not be read when the queue was opened (a damaged file, a record
   * that fails its schema): they are left out of the queue, never sent, and reported once.
   * `details`: `key`, `owner`, `origin`, `count`, `seqs` (their identities in the queue) and
   * `records` (`DamagedPendingRecord`: seq, reason, where the store kept it or what it held).
   * The other pending updates are pushed as usual (docs/offline.md, "Damaged records").
   */
  "CORRUPT_PENDING",
  /**
   * A pending update was refused when it was re-run on the latest confirmed state: its command
   * threw, or its result failed the state's schema (`cause` holds why). It is dropped from the
   * queue, never appended, never retried (docs/offline.md).
   */
  "UPDATE_REFUSED",
  /**
   * The log holds no entry at a revision it assigned (an event, not a stop: every replica steps
   * over it alike). nats-server 2.9 used up a stream sequence for a publish its resource limits
   * refused (nothing stored); a stream that denies deletes can have no other such gap
   * (docs/guarantees.md, "No silent gaps").
   */
  "SKIPPED_SEQUENCE",
] as const;

/** One of {@link ERROR_CODES}. */
export type StateSyncErrorCode = (typeof ERROR_CODES)[number];

/** The one error class of statesync. `code` is stable; `details` carries structured context. */
export class StateSyncError extends Error {
  override readonly name = "StateSyncError";
  readonly code: StateSyncErrorCode;
  /** Structured context, e.g. `{ revision }` of the entry concerned. */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: StateSyncErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = Object.freeze({ ...(options.details ?? {}) });
  }
}

/**
 * Thrown by {@link RevisionedLog.appendConditional} when the log is not at the expected revision
 * (JetStream API error 10071, "wrong last sequence").
 */
export class AppendConflictError extends StateSyncError {
  /** The log's latest revision when known, else undefined. */
  readonly latestRevision: number | undefined;
  constructor(expectedRevision: number, latestRevision?: number, cause?: unknown) {
    super(
      "CONFLICT",
      `conditional append expected revision ${expectedRevision}` +
        (latestRevision === undefined ? "" : `, log is at ${latestRevision}`),
      { cause, details: { expectedRevision, latestRevision } },
    );
    this.latestRevision = latestRevision;
  }
}

/**
 * The `CONNECTION_CLOSED` error of a log whose connection ended for good: `why` says how (the
 * client's reason, when it gave one, is `cause`); `notSent` when the call failing with it sent
 * nothing.
 */
export function connectionClosedError(
  why: string,
  options: { cause?: unknown; notSent?: boolean; details?: Record<string, unknown> } = {},
): StateSyncError {
  return new StateSyncError(
    "CONNECTION_CLOSED",
    `the log's connection is closed for good (${why}); open a new replica on a new connection`,
    {
      cause: options.cause,
      details: { ...options.details, ...(options.notSent ? { notSent: true } : {}) },
    },
  );
}

/** True when `err` is a {@link StateSyncError}, optionally of the given code. */
export function isStateSyncError(err: unknown, code?: StateSyncErrorCode): err is StateSyncError {
  return err instanceof StateSyncError && (code === undefined || err.code === code);
}

/**
 * What the caller of `updateUnconditionally` gets when its command entry, stored at `revision`,
 * is a no-op on every replica (`failure`, as the replica reported it): `COMMAND_FAILED` with
 * `details.committed: true` (the entry is in the log; sending the command again appends another).
 */
export function commandFailed(failure: StateSyncError, revision: number): StateSyncError {
  return new StateSyncError("COMMAND_FAILED", failure.message, {
    cause: failure.cause ?? failure,
    details: { ...failure.details, revision, committed: true },
  });
}

/** The event of a revision the log holds no entry at (`LogEntry.skipped`). */
export function skippedSequence(revision: number): StateSyncError {
  return new StateSyncError(
    "SKIPPED_SEQUENCE",
    `the log holds no entry at revision ${revision}: the server used up the sequence for a publish it refused (nats-server 2.9 with resource limits), and every replica steps over it`,
    { details: { revision } },
  );
}

/**
 * `VALIDATION` for an argument of the wrong type: "`call`: `name` must be `type`, not …" (the
 * value's type, never its content). For public functions whose types a plain JavaScript caller
 * did not follow (a trial: `decodeEntry(null)` threw a raw `TypeError`).
 */
export function notA(call: string, name: string, type: string, value: unknown): StateSyncError {
  const got = value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
  return new StateSyncError("VALIDATION", `${call}: ${name} must be ${type}, not ${got}`);
}
