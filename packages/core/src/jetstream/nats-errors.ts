import { NATS_DENIED } from "../connect-failure.js";
import { AppendConflictError, connectionClosedError, StateSyncError } from "../errors.js";
import { natsV3ErrorInfo } from "./adapter-v3.js";
import type { NatsErrorLike } from "./nats-types.js";

/** JetStream API error codes statesync reacts to (`api_error.err_code`). */
export const JS_ERR = {
  /** "wrong last sequence: N" on a conditional publish. */
  WRONG_LAST_SEQUENCE: 10071,
  /** "no message found" from STREAM.MSG.GET. */
  NO_MESSAGE_FOUND: 10037,
  /** "stream not found". */
  STREAM_NOT_FOUND: 10059,
  /** "stream name already in use with a different configuration". */
  STREAM_NAME_IN_USE: 10058,
  /** "message size exceeds maximum allowed" (stream `max_msg_size`). */
  MESSAGE_TOO_LARGE: 10054,
  /** "replicas > 1 not supported in non-clustered mode" (a stream create). */
  REPLICAS_NOT_SUPPORTED: 10074,
  /** "invalid operation on sealed stream" (a publish, purge or delete on a sealed stream). */
  STREAM_SEALED: 10109,
  /** "stream purge not permitted" (a purge of a `deny_purge` stream). */
  PURGE_FAILED: 10110,
  /** "subjects overlap with an existing stream" (a stream create). */
  SUBJECT_OVERLAP: 10065,
} as const;

/**
 * Refusals of a stream create that last until the server's setup changes (nats-server
 * `errors.json`): 10065 subjects overlap with an existing stream, 10052 invalid configuration,
 * 10027 maximum number of streams, 10002 account resource limits, 10023 insufficient resources,
 * 10028 / 10047 insufficient memory / storage, 10053 stream limits. Retrying them as a server
 * that is down left a replica `offline` for good with no error naming the cause (a fresh-eyes
 * trial); `ensureStream` reports them as `STREAM_CONFIG`.
 */
export const LASTING_CREATE_REFUSALS: ReadonlySet<number> = new Set([
  JS_ERR.SUBJECT_OVERLAP,
  10052,
  10027,
  10002,
  10023,
  10028,
  10047,
  10053,
]);

/**
 * Refusals of a publish for the account's or the server's resource limits (10002, 10023, 10028,
 * 10047): nothing was stored, and every publish meets them until space is freed or the limit is
 * raised. Before, an append refused so read as an unknown outcome, and the replica then stalled
 * `TRUNCATED` (a trial on 2.9.10, whose refused publish used up a stream sequence:
 * log-reader.ts, invariant 4).
 */
const RESOURCE_REFUSALS: ReadonlySet<number> = new Set([10002, 10023, 10028, 10047]);

/**
 * What an error of either nats.js line says, in v2's shape: a v3 error through
 * `natsV3ErrorInfo` (its classes mapped to v2's codes), anything else as it is.
 */
export function natsErrorInfo(err: unknown): NatsErrorLike {
  return natsV3ErrorInfo(err) ?? ((err ?? {}) as NatsErrorLike);
}

/** The JetStream API error code of a nats.js error (either line), if it carries one. */
export function apiErrorCode(err: unknown): number | undefined {
  return natsErrorInfo(err).api_error?.err_code;
}

/**
 * Maps what nats.js throws (either line, read through {@link natsErrorInfo}) to a
 * `StateSyncError` (jetstream-notes; match on `code` and `api_error.err_code`, never on the
 * message):
 * - 10071 with an `expectedRevision` → {@link AppendConflictError} (the latest revision parsed
 *   from the description as optional detail);
 * - `PERMISSIONS_VIOLATION` and authentication failures → `PERMISSION_DENIED`;
 * - `MAX_PAYLOAD_EXCEEDED`, 10054 → `PAYLOAD_TOO_LARGE`;
 * - 10059 (stream not found) → `TRUNCATED` (the log was deleted);
 * - 10002, 10023, 10028, 10047 (resource limits: {@link RESOURCE_REFUSALS}) → `STREAM_CONFIG`
 *   with `notSent`;
 * - 10109 (sealed stream), 10110 (purge not permitted: `deny_purge`) → `STREAM_CONFIG`: the
 *   stream refuses the operation for as long as its configuration stays, so it is final (the
 *   server refused at once: nothing was stored, and a re-send would be refused the same way);
 * - `CONNECTION_CLOSED` (nats.js closed the connection, for good: a request in flight is failed
 *   so) → `CONNECTION_CLOSED`, whose outcome for an append is unknown (no `notSent`);
 * - `503` no responders → `UNAVAILABLE` with `notSent`: no stream received it, nothing stored;
 * - everything else (`TIMEOUT`, `DISCONNECT`, other API errors) → `UNAVAILABLE`: for an append
 *   the outcome is unknown.
 * A `StateSyncError` passes through unchanged.
 */
export function toStateSyncError(
  err: unknown,
  what: string,
  expectedRevision?: number,
): StateSyncError {
  if (err instanceof StateSyncError) return err;
  const e = natsErrorInfo(err);
  const errCode = e.api_error?.err_code;
  const text = `${what}: ${e.api_error?.description ?? e.message ?? String(err)}`;
  if (errCode === JS_ERR.WRONG_LAST_SEQUENCE && expectedRevision !== undefined) {
    const m = /(\d+)\s*$/.exec(e.api_error?.description ?? "");
    return new AppendConflictError(expectedRevision, m ? Number(m[1]) : undefined, err);
  }
  const details = { natsCode: e.code, errCode };
  if (e.code !== undefined && NATS_DENIED.has(e.code)) {
    // A user who may subscribe only on its own inbox prefix (docs/permissions.md) and whose
    // connection kept the default one: the server's words alone did not say what to do.
    const inbox = /Subscription to "_INBOX\./.test(text)
      ? ": this user may not subscribe to the default reply inbox (_INBOX); set connectOptions.inboxPrefix (or the inboxPrefix of a connection you pass) to the prefix the server allows it (docs/permissions.md)"
      : "";
    return new StateSyncError("PERMISSION_DENIED", `${text}${inbox}`, { cause: err, details });
  }
  if (e.code === "MAX_PAYLOAD_EXCEEDED" || errCode === JS_ERR.MESSAGE_TOO_LARGE) {
    return new StateSyncError("PAYLOAD_TOO_LARGE", text, { cause: err, details });
  }
  if (e.code === "CONNECTION_CLOSED") {
    return connectionClosedError(`${text}: nats.js closed the connection`, { cause: err, details });
  }
  if (errCode === JS_ERR.STREAM_NOT_FOUND) {
    return new StateSyncError("TRUNCATED", `${text} (the stream was deleted)`, {
      cause: err,
      details,
    });
  }
  if (errCode === JS_ERR.STREAM_SEALED) {
    return new StateSyncError("STREAM_CONFIG", `${text} (the stream is sealed: nothing stored)`, {
      cause: err,
      details: { ...details, notSent: true },
    });
  }
  if (errCode !== undefined && RESOURCE_REFUSALS.has(errCode)) {
    return new StateSyncError(
      "STREAM_CONFIG",
      `${text} (the server's resource limits refuse it: nothing stored; raise the limit or free space)`,
      { cause: err, details: { ...details, notSent: true } },
    );
  }
  if (errCode === JS_ERR.PURGE_FAILED) {
    return new StateSyncError(
      "STREAM_CONFIG",
      `${text} (the stream denies purges, deny_purge: compaction cannot truncate it)`,
      { cause: err, details },
    );
  }
  // No responders: no stream took the subject when it was published (a deleted stream, a
  // cluster between leaders), so nothing was stored: a definite failure, not an unknown outcome.
  if (e.code === "503") {
    return new StateSyncError("UNAVAILABLE", text, {
      cause: err,
      details: { ...details, notSent: true },
    });
  }
  return new StateSyncError("UNAVAILABLE", text, { cause: err, details });
}
