import { serversText, StateSyncError } from "@statesync/core";
import type { ConnectionOptions } from "nats";

/**
 * `tls://` server URLs, honoured. nats.js (v2, and v3's `@nats-io/transport-node`) dials every
 * URL over plain TCP whatever its scheme, and starts TLS only when the server's `INFO` offers it
 * or the `tls` option asks for it: a `tls://` URL alone did not require TLS, so a server without
 * TLS (or an impostor saying so) was sent `CONNECT` with the credentials in clear text.
 */

const TLS_SCHEME = /^tls:\/\//i;

/**
 * Whether `servers` ask for TLS: true when every URL is `tls://`, false when none is. Throws
 * `VALIDATION` for a list that mixes `tls://` with other URLs (`nats://`, a bare `host:port`):
 * nats.js's `tls` option holds for every server of a connection, so such a list cannot be
 * honoured as written; give `tls://` for all of them (or `nats://` URLs with a `tls` option,
 * which requires TLS of all).
 */
export function serversRequireTls(servers: string | readonly string[] | undefined): boolean {
  const list = typeof servers === "string" ? [servers] : (servers ?? []);
  const tls = list.filter((s) => TLS_SCHEME.test(s.trim()));
  if (tls.length === 0) return false;
  if (tls.length === list.length) return true;
  throw new StateSyncError(
    "VALIDATION",
    `servers mixes tls:// with other URLs (${serversText(list)}): TLS is required of every ` +
      "server of a connection or of none; give tls:// for all of them (or nats:// URLs with " +
      "TLS options, which require TLS of all)",
    { details: { servers: list.map((s) => serversText(s)) } },
  );
}

/**
 * `options` with TLS required when its `servers` are `tls://` URLs: `tls` is the caller's TLS
 * options (`caFile`, `certFile`…) or `{}`, so that nats.js refuses a server that does not offer
 * TLS before it sends `CONNECT` (nats.js `SERVER_OPT_NA`, read as `UNSUPPORTED_SERVER` by
 * `tlsFailure`). Servers the cluster announces later are held to TLS too (the option is the
 * connection's). Unchanged for `nats://` URLs. Throws `VALIDATION` for a list mixing `tls://`
 * with other URLs ({@link serversRequireTls}) and for `tls: null` (TLS turned off) with `tls://`.
 */
export function withTlsOfServers(options: ConnectionOptions): ConnectionOptions {
  if (!serversRequireTls(options.servers)) return options;
  if (options.tls === null) {
    throw new StateSyncError(
      "VALIDATION",
      `tls: null turns TLS off, which the tls:// URLs (${serversText(options.servers)}) require; ` +
        "leave tls out or give TLS options",
    );
  }
  return { ...options, tls: options.tls ?? {} };
}
