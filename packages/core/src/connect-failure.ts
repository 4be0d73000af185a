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

/**
 * A server URL fit for a message or a log: its user info masked, since a URL may carry
 * credentials (`nats://alice:s3cret@host:4222` → `nats://alice:***@host:4222`; a user part
 * alone may be a token, so `nats://t0ken@host` → `nats://***@host`). Anything else is kept as
 * given (`host:port`, the path of a `ws://` URL).
 */
export function redactServer(server: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(server)?.[0] ?? "";
  const rest = server.slice(scheme.length);
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const at = authority.lastIndexOf("@");
  if (at < 0) return server;
  const userInfo = authority.slice(0, at);
  const colon = userInfo.indexOf(":");
  const masked = colon < 0 ? "***" : `${userInfo.slice(0, colon)}:***`;
  return `${scheme}${masked}${rest.slice(at)}`;
}

/**
 * The server URL(s) a connection goes to, for a message: each one's user info masked
 * ({@link redactServer}), comma-separated; "the server" when none is given.
 */
export function serversText(target?: string | readonly string[]): string {
  const list = typeof target === "string" ? [target] : (target ?? []);
  return list.length === 0 ? "the server" : list.map(redactServer).join(", ");
}

interface ErrorLike {
  readonly code?: unknown;
  readonly message?: unknown;
}

/**
 * What nats.ws in a browser knows of a WebSocket that failed before it connected: its error
 * (code `UNKNOWN_ERROR`, `message` undefined) comes from a WebSocket `error` event, which
 * browsers leave without a reason on purpose (refused, unreachable, TLS, a wrong path all look
 * alike). Said so, rather than the bare code (a trial read `cannot connect to ...: UNKNOWN_ERROR`).
 */
const WEBSOCKET_FAILED =
  "the WebSocket closed before the NATS handshake (connection refused, host unreachable, or " +
  "no NATS WebSocket listener there; the browser does not say which)";

/**
 * A connect error in words: its message, else its code, else its text. (nats.ws in a browser
 * rejects with an error whose `message` is undefined: a WebSocket error event says no more;
 * then {@link WEBSOCKET_FAILED}.)
 */
function describe(err: unknown, target?: string | readonly string[]): string {
  const e = err as ErrorLike | null;
  if (typeof e?.message === "string" && e.message !== "") return e.message;
  if (e?.code === "UNKNOWN_ERROR") {
    const list = typeof target === "string" ? [target] : (target ?? []);
    return list.length > 0 && list.every((url) => /^wss?:\/\//i.test(url))
      ? WEBSOCKET_FAILED
      : "the connection failed before the NATS handshake (nats.js gave no reason: UNKNOWN_ERROR)";
  }
  if (typeof e?.code === "string" && e.code !== "") return e.code;
  const text = String(err);
  return text === "[object Object]" || text === "" ? "the connection failed" : text;
}

/**
 * The `StateSyncError` of a failed connection attempt to `target` (the server URL(s); "the
 * server" when not given), message `cannot connect to <target>: <why>` (user info of the URLs
 * masked: {@link serversText}), `cause` the error:
 * a server that refused the credentials (`AUTHORIZATION_VIOLATION`, `BAD_CREDS`…) → `PERMISSION_DENIED`;
 * nats.js `INVALID_OPTION` → `VALIDATION`; anything else (refused, unreachable, `TIMEOUT`) →
 * `UNAVAILABLE`. Only `UNAVAILABLE` is worth retrying. A `StateSyncError` passes unchanged.
 */
export function connectFailure(err: unknown, target?: string | readonly string[]): StateSyncError {
  if (err instanceof StateSyncError) return err;
  const to = serversText(target);
  const e = (err ?? {}) as ErrorLike;
  const code = typeof e.code === "string" ? e.code : "";
  const typed = NATS_DENIED.has(code)
    ? "PERMISSION_DENIED"
    : code === "INVALID_OPTION"
      ? "VALIDATION"
      : "UNAVAILABLE";
  return new StateSyncError(typed, `cannot connect to ${to}: ${describe(err, target)}`, {
    cause: err,
    ...(code ? { details: { natsCode: code } } : {}),
  });
}
