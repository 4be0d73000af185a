import { StateSyncError } from "./errors.js";

/**
 * What a failed connection attempt means, typed. Shared by `keepConnecting` (every runtime's
 * background connection) and the Node package's `connectNats` (the `statesync` CLI too, which
 * reads failed TLS handshakes first: `tlsFailure` there), so that one failure reads the same
 * wherever it surfaces.
 */

/** nats.js error codes of a server that refused who the client is: retrying will not help. */
export const NATS_DENIED: ReadonlySet<string> = new Set([
  "PERMISSIONS_VIOLATION",
  "AUTHORIZATION_VIOLATION",
  "AUTHENTICATION_EXPIRED",
  "AUTHENTICATION_TIMEOUT",
  "ACCOUNT_EXPIRED",
  "BAD_AUTHENTICATION",
  "BAD_CREDS",
]);

interface ErrorLike {
  readonly code?: unknown;
  readonly message?: unknown;
}

/**
 * A connect error in words: its message, else its code, else its text. (nats.ws in a browser
 * rejects with an error whose `message` is undefined: a WebSocket error event says no more.)
 */
function describe(err: unknown): string {
  const e = err as ErrorLike | null;
  if (typeof e?.message === "string" && e.message !== "") return e.message;
  if (typeof e?.code === "string" && e.code !== "") return e.code;
  const text = String(err);
  return text === "[object Object]" || text === "" ? "the connection failed" : text;
}

/**
 * The `StateSyncError` of a failed connection attempt to `target` (the server URL(s); "the
 * server" when not given), message `cannot connect to <target>: <why>`, `cause` the error:
 * a server that refused the credentials (`AUTHORIZATION_VIOLATION`, `BAD_CREDS`…) → `PERMISSION_DENIED`;
 * nats.js `INVALID_OPTION` → `VALIDATION`; anything else (refused, unreachable, `TIMEOUT`) →
 * `UNAVAILABLE`. Only `UNAVAILABLE` is worth retrying. A `StateSyncError` passes unchanged.
 */
export function connectFailure(err: unknown, target?: string | readonly string[]): StateSyncError {
  if (err instanceof StateSyncError) return err;
  const to = typeof target === "string" ? target : target?.join(", ") || "the server";
  const e = (err ?? {}) as ErrorLike;
  const code = typeof e.code === "string" ? e.code : "";
  const typed = NATS_DENIED.has(code)
    ? "PERMISSION_DENIED"
    : code === "INVALID_OPTION"
      ? "VALIDATION"
      : "UNAVAILABLE";
  return new StateSyncError(typed, `cannot connect to ${to}: ${describe(err)}`, {
    cause: err,
    ...(code ? { details: { natsCode: code } } : {}),
  });
}
