import { connectFailure, serversText, StateSyncError } from "@statesync/core";

/**
 * Failed TLS handshakes of the Node client (`nats` over Node's `tls`), read into typed errors:
 * what {@link connectNats} (and the `statesync` CLI) reject with. Node-only: a browser's
 * WebSocket error says nothing of TLS.
 */

/**
 * TLS alerts (OpenSSL's names, as in Node's `ERR_SSL_<version>_ALERT_<name>` codes) a server
 * sends when it does not accept the client's certificate: none given, signed by a CA it does not
 * trust, expired, revoked.
 */
const CERTIFICATE_ALERTS =
  /ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED|UNKNOWN_CA|CERTIFICATE_EXPIRED|CERTIFICATE_REVOKED|CERTIFICATE_UNKNOWN|UNSUPPORTED_CERTIFICATE|ACCESS_DENIED)$/;

/** Node's codes of a server certificate the client does not trust (X.509 checks, host name). */
const UNTRUSTED_SERVER = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "CERT_REVOKED",
  "CERT_UNTRUSTED",
  "CERT_REJECTED",
  "CERT_SIGNATURE_FAILURE",
  "INVALID_CA",
  "HOSTNAME_MISMATCH",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** A failed TLS handshake, in words (see {@link tlsFailure}). */
export interface TlsFailure {
  /**
   * `PERMISSION_DENIED`: the server refused the client's certificate (retrying will not help);
   * `VALIDATION`: the client's TLS options cannot be used (a certificate file that cannot be
   * read); `UNSUPPORTED_SERVER`: the server offers no TLS, which this client requires (a
   * `tls://` URL or TLS options; nothing was sent to it, retrying will not help);
   * `UNAVAILABLE`: any other failed handshake (the client does not trust the server's
   * certificate, another alert).
   */
  readonly code: "PERMISSION_DENIED" | "VALIDATION" | "UNSUPPORTED_SERVER" | "UNAVAILABLE";
  /** Who refused: `server`, `client`, or `options` for unusable TLS options. */
  readonly refusedBy: "server" | "client" | "options";
  /** What happened, e.g. "TLS refused by the server: it did not accept this client's certificate (…)". */
  readonly text: string;
  /** The code it was read from (`ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE`, `CERT_HAS_EXPIRED`…). */
  readonly errorCode: string;
}

interface ErrorLike {
  readonly code?: unknown;
  readonly message?: unknown;
  readonly chainedError?: unknown;
  readonly cause?: unknown;
}

/** The error and the ones it wraps (nats.js `chainedError`, `cause`), outermost first. */
function chain(err: unknown): ErrorLike[] {
  const out: ErrorLike[] = [];
  for (let e = err; typeof e === "object" && e !== null && out.length < 4;) {
    const like = e as ErrorLike;
    out.push(like);
    e = like.chainedError ?? like.cause;
  }
  return out;
}

const codeOf = (e: ErrorLike): string => (typeof e.code === "string" ? e.code : "");
const messageOf = (e: ErrorLike): string => (typeof e.message === "string" ? e.message : "");

/** "sslv3 alert bad certificate" out of OpenSSL's long message, else the code. */
function alertOf(e: ErrorLike): string {
  const alert = /:([a-z0-9 ]*alert [a-z0-9 ]+)(?::|$)/i.exec(messageOf(e))?.[1];
  return alert ?? codeOf(e);
}

/**
 * Reads a failed TLS handshake out of what nats.js (`nats`, over Node's `tls`) rejects with, or
 * returns undefined for any other error. Looks at the error's `code` and those it wraps:
 * - `ERR_SSL_…_ALERT_…` of a certificate (bad, required, unknown CA, expired…): the server
 *   refused this client's certificate → `PERMISSION_DENIED`; any other alert → `UNAVAILABLE`;
 * - Node's certificate checks (`UNABLE_TO_VERIFY_LEAF_SIGNATURE`, `CERT_HAS_EXPIRED`,
 *   `ERR_TLS_CERT_ALTNAME_INVALID`…): this client does not trust the server's certificate →
 *   `UNAVAILABLE` (the server's certificate may be replaced while the client waits);
 * - other `ERR_SSL_…` codes → `UNAVAILABLE`;
 * - nats.js `SERVER_OPT_NA` for `tls` (the server's `INFO` offers no TLS, which the client
 *   requires: a `tls://` URL or TLS options; the client sent nothing) → `UNSUPPORTED_SERVER`;
 * - nats.js `TLS` (its TLS options failed to load) → `VALIDATION`.
 */
export function tlsFailure(err: unknown): TlsFailure | undefined {
  const errors = chain(err);
  // nats.js's own `TLS` code wraps Node's error when there is one: that one says more.
  for (const e of [...errors.filter((e) => codeOf(e) !== "TLS"), ...errors]) {
    const found = readTls(e);
    if (found) return { ...found, errorCode: codeOf(e) };
  }
  return undefined;
}

/** One error of the chain read as a failed TLS handshake (see {@link tlsFailure}). */
function readTls(e: ErrorLike): Omit<TlsFailure, "errorCode"> | undefined {
  const code = codeOf(e);
  if (code.startsWith("ERR_SSL_") && code.includes("_ALERT_")) {
    return CERTIFICATE_ALERTS.test(code)
      ? {
          code: "PERMISSION_DENIED",
          refusedBy: "server",
          text: `TLS refused by the server: it did not accept this client's certificate (${alertOf(e)})`,
        }
      : {
          code: "UNAVAILABLE",
          refusedBy: "server",
          text: `TLS refused by the server (${alertOf(e)})`,
        };
  }
  if (UNTRUSTED_SERVER.has(code)) {
    return {
      code: "UNAVAILABLE",
      refusedBy: "client",
      text: `TLS handshake failed: this client does not trust the server's certificate (${code}: ${messageOf(e)})`,
    };
  }
  if (code.startsWith("ERR_SSL_")) {
    return { code: "UNAVAILABLE", refusedBy: "client", text: `TLS handshake failed (${code})` };
  }
  if (code === "SERVER_OPT_NA" && messageOf(e) === "tls") {
    return {
      code: "UNSUPPORTED_SERVER",
      refusedBy: "client",
      text:
        "the server does not offer TLS, which this client requires (tls:// URL or TLS " +
        "options); nothing was sent to it",
    };
  }
  if (code === "TLS") {
    return {
      code: "VALIDATION",
      refusedBy: "options",
      text: `the TLS options cannot be used: ${messageOf(e) || code}`,
    };
  }
  return undefined;
}

/**
 * {@link tlsFailure} first, then core's `connectFailure`: the `StateSyncError` of a failed
 * connection attempt to `target` (the server URL(s), user info masked: core's `serversText`),
 * message `cannot connect to <target>: <why>`,
 * `cause` the error. A failed TLS handshake carries `details.tls` (who refused: `server`,
 * `client`, `options`) and its code (`PERMISSION_DENIED` for a client certificate the server
 * refused, `VALIDATION` for unusable TLS options, `UNSUPPORTED_SERVER` for a server without
 * TLS, `UNAVAILABLE` otherwise).
 */
export function connectFailureOf(
  err: unknown,
  target?: string | readonly string[],
): StateSyncError {
  if (err instanceof StateSyncError) return err;
  const tls = tlsFailure(err);
  if (!tls) return connectFailure(err, target);
  const to = serversText(target);
  return new StateSyncError(tls.code, `cannot connect to ${to}: ${tls.text}`, {
    cause: err,
    details: { tls: tls.refusedBy, natsCode: tls.errorCode },
  });
}
