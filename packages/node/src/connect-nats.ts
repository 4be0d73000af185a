import { checkNatsConnectOptions } from "@statesync/core";
import { connect, type ConnectionOptions, type NatsConnection } from "nats";
import { serverSpeaks } from "./server-preflight.js";
import { connectFailureOf, tlsFailure } from "./tls-failure.js";
import { withTlsOfServers } from "./tls-servers.js";

/** nats.js's `timeout` default: how long one connection attempt may take, ms. */
const NATS_CONNECT_TIMEOUT_MS = 20_000;
/**
 * A probe starts once an attempt has taken this long (ms), or a quarter of its `timeout` if less:
 * well within the 5 s a replica's first request waits for the connection, so that the opening
 * fails with the refusal rather than reading `offline`; and longer than a healthy connection
 * takes (TCP, TLS 1.3 and CONNECT/PONG are about four round trips), so that it rarely runs.
 */
const PROBE_AFTER_MAX_MS = 1_500;

/**
 * `connect` of `nats` (TCP) that says why a TLS handshake failed instead of `TIMEOUT`, typed.
 *
 * Why: with TLS 1.3 a server that refuses the client's certificate (none given, signed by a CA
 * it does not trust) says so only after the client's side of the handshake is done, and
 * nats.js, when it may reconnect (`reconnect`, the default), takes that closed socket for a
 * lost connection and waits out its whole `timeout` (20 s by default) before rejecting
 * `TIMEOUT`: the refusal itself is lost. So when an attempt has not settled after a quarter of
 * its `timeout` (at most 1.5 s), one probe connects with the same options and `reconnect: false`,
 * which rejects with the server's alert at once. If the probe reads a failed TLS handshake
 * (`tlsFailure`), the attempt rejects with it (and a connection it still makes is closed);
 * otherwise the probe is closed or ignored and the attempt goes on. A healthy server answers
 * before the probe starts, so it costs nothing then. Best effort: on a loaded machine an attempt
 * was seen to end `TIMEOUT` (`UNAVAILABLE`, retried) without the probe reading the refusal, in
 * about one full test-suite run of two; the next attempt reads it. (The attempt itself is now made
 * with `reconnect: false` ({@link firstConnection}), so such a close usually ends it at once too;
 * the probe stays for the refusals it reads better.)
 *
 * `tls://` URLs require TLS ({@link withTlsOfServers}): a server that offers none is refused
 * before anything is sent to it (`UNSUPPORTED_SERVER`); a list mixing `tls://` with other URLs,
 * or `tls: null` with `tls://`, rejects `VALIDATION` before connecting.
 *
 * `signal` (aborted when the caller gives up, e.g. `keepConnecting`'s cancel): no probe starts
 * after it; the attempt in flight is nats.js's and cannot be cancelled.
 *
 * Resolves to the connection; rejects with {@link connectFailureOf}'s `StateSyncError`
 * (`cannot connect to <servers>: …`, `cause` the error of nats.js or Node): `PERMISSION_DENIED`
 * for refused credentials or a client certificate the server refused (`details.tls: "server"`),
 * `VALIDATION` for unusable options (before connecting: core's `natsConnectOptionsSchema`),
 * `UNSUPPORTED_SERVER` for a server that offers no TLS this
 * client requires, `UNAVAILABLE` for the rest (a server certificate this client
 * does not trust: `details.tls: "client"`; refused, unreachable, `TIMEOUT`).
 */
export async function connectNats(
  given: ConnectionOptions,
  signal?: AbortSignal,
): Promise<NatsConnection> {
  // A number nats.js would act on badly (`timeout: -1`), or an unknown key: VALIDATION here.
  checkNatsConnectOptions("connectNats", given);
  let options = withTlsOfServers(given);
  // A server that never speaks would leave nats.js's socket open for good (server-preflight.ts):
  // the one that spoke first is dialled first, the others keep their order behind it.
  const handshakeFirst = options.tls?.handshakeFirst === true;
  const timeoutMs = options.timeout ?? NATS_CONNECT_TIMEOUT_MS;
  const spoke = handshakeFirst ? undefined : await serverSpeaks(options.servers, timeoutMs, signal);
  if (spoke !== undefined && Array.isArray(options.servers) && options.servers.length > 1) {
    const others = options.servers.filter((s) => s !== spoke);
    options = { ...options, servers: [spoke, ...shuffled(others, options)], noRandomize: true };
  }
  const attempt = firstConnection(options, timeoutMs, signal);
  const probeAfter = Math.min(PROBE_AFTER_MAX_MS, (options.timeout ?? NATS_CONNECT_TIMEOUT_MS) / 4);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const refused = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => void probe(options, signal).then((err) => err !== undefined && reject(err)),
      probeAfter,
    );
    timer.unref?.();
  });
  // Cancelled (the replica closed): no probe; the attempt itself is nats.js's and runs out alone.
  const noProbe = () => clearTimeout(timer);
  if (signal?.aborted) noProbe();
  signal?.addEventListener("abort", noProbe, { once: true });
  refused.catch(() => undefined);
  try {
    return await Promise.race([attempt, refused]);
  } catch (err) {
    // The probe won: the attempt may still connect (it never does when the server refused TLS).
    attempt
      .then(
        (nc) => nc.close(),
        () => undefined,
      )
      .catch(() => undefined);
    // The attempt (made without reconnecting) ended at once on a reset during a TLS connection:
    // the server's alert may have been discarded unread (see `probe`), which the probe reads.
    // Before, such an attempt won the race against the probe and a refused client certificate
    // read `UNAVAILABLE: read ECONNRESET` (retried for ever) instead of `PERMISSION_DENIED`.
    const reset = options.tls && tlsFailure(err) === undefined && resetIn(err);
    const read = reset && signal?.aborted !== true ? await probe(options, signal) : undefined;
    throw connectFailureOf(read ?? err, options.servers);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", noProbe);
  }
}

/**
 * nats.js's `connect` whose first connection does not wait out its `timeout` on a socket that
 * closed during the handshake. With `reconnect` on, nats.js takes a socket that closes after the
 * server's INFO and before its PONG (a server shutting down, a proxy cutting connections) for a
 * lost connection, and waits for that PONG on the dead socket for its whole `timeout` (20 s by
 * default; a fault trial: a replica opened while a proxy cut handshakes stayed `offline` 20 s).
 * With `reconnect: false` it fails such an attempt at once (it closes, which ends the wait), and
 * `keepConnecting` tries again. So the first connection is made without reconnecting, and
 * reconnecting is turned on (as the caller asked) on the connection made: nats.js reads
 * `options.reconnect` of the connection's options only when a connection is lost. A connection
 * without that object (another nats.js) is closed and made again the usual way. With several
 * servers, nats.js's connect then ends at the first that fails after accepting instead of going
 * on to the next: the others are tried in turn here, the next that speaks first (a list whose
 * first server was full, its second healthy, stayed `offline` for good).
 */
async function firstConnection(
  options: ConnectionOptions,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<NatsConnection> {
  const reconnect = options.reconnect ?? true;
  if (!reconnect) return connect(options);
  const list = Array.isArray(options.servers) ? options.servers : [];
  const failed = new Set<string>();
  let next = options;
  for (;;) {
    let nc: NatsConnection;
    try {
      nc = await connect({ ...next, reconnect: false });
    } catch (err) {
      // Not reconnecting, nats.js also ends the attempt at a server that fails after accepting
      // (one that is full, shutting down, or refuses the user), where it used to go on to the
      // next server of the list. Then the next of the others that speaks is dialled first; the
      // list stays whole (later reconnects use it).
      // (With several servers `next.servers` is a list; `noRandomize`: its first was dialled.)
      const several = list.length > 1 && next.noRandomize === true;
      const first = several ? (next.servers as string[])[0] : undefined;
      if (first === undefined || signal?.aborted) throw err;
      failed.add(first);
      const rest = list.filter((s) => !failed.has(s));
      const spoke =
        rest.length === 0
          ? undefined
          : await serverSpeaks(rest, timeoutMs, signal).catch(() => undefined);
      if (spoke === undefined) throw err;
      next = {
        ...options,
        servers: [spoke, ...list.filter((s) => s !== spoke)],
        noRandomize: true,
      };
      continue;
    }
    const own = (nc as { options?: { reconnect?: unknown } }).options;
    if (typeof own === "object" && own !== null && own.reconnect === false) {
      own.reconnect = true;
      return nc;
    }
    await nc.close().catch(() => undefined);
    return connect(options);
  }
}

/** Whether `err` or an error it wraps is a reset connection (`ECONNRESET`, `EPIPE`). */
function resetIn(err: unknown): boolean {
  for (let e = err, i = 0; typeof e === "object" && e !== null && i < 4; i++) {
    const { code, chainedError, cause } = e as {
      code?: unknown;
      chainedError?: unknown;
      cause?: unknown;
    };
    if (code === "ECONNRESET" || code === "EPIPE") return true;
    e = chainedError ?? cause;
  }
  return false;
}

/** Probes at most this many times while one fails without a TLS reason (see {@link probe}). */
const PROBES = 3;

/**
 * Attempts that do not reconnect: the error of a failed TLS handshake, else undefined. A server
 * that refuses the certificate sends its alert and closes; when the client's CONNECT reaches the
 * closed socket first, the reset can discard the alert unread (the client reads `ECONNRESET`),
 * which a full-suite run on a loaded machine met. So a probe that fails for another reason is
 * tried again, up to {@link PROBES} times (a server that is down fails each one at once).
 */
async function probe(options: ConnectionOptions, signal?: AbortSignal): Promise<unknown> {
  // None after the caller gave up: each holds the process for up to its `timeout` (a replica
  // closed while a server accepted TCP and never answered stayed alive for minutes: a trial).
  for (let i = 0; i < PROBES && signal?.aborted !== true; i++) {
    try {
      const nc = await connect({ ...options, reconnect: false, waitOnFirstConnect: false });
      await nc.close().catch(() => undefined);
      return undefined;
    } catch (err) {
      if (tlsFailure(err) !== undefined) return err;
    }
  }
  return undefined;
}

/**
 * The host nats.js dials for `url`: it reads a server's host and port as an `http://` URL's
 * (nats-core's `hostPort`), where an internationalized name becomes its punycode
 * (`bücher.example`: `xn--bcher-kva.example`); `url`'s own `hostname` under `nats:` or `tls:` is
 * percent-encoded instead (`b%C3%BCcher.example`), which no host check should read. Throws
 * (as nats.js does) for a host no `http://` URL takes.
 */
function dialledHost(url: URL): string {
  return new URL(`http://${url.host}`).hostname;
}

/** `servers` in a random order, as nats.js would dial them, unless `noRandomize` was asked. */
function shuffled(servers: string[], options: ConnectionOptions): string[] {
  if (options.noRandomize === true) return servers;
  const out = [...servers];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * Whether `server` is a URL `nats` dials over TCP: `nats://` or `tls://` with a host and no path,
 * or a bare `host[:port]` (nats.js dials port 4222 for a bare host). A bare form with a slash
 * (`nats:/h:4222`, `nats//h:4222`) is refused: nats.js read it as host `nats` and retried
 * `ENOTFOUND` for ever, and so is a host no DNS name or IP address can be (`n1,n2`, `h!`). The
 * check `openSynchronizer` and the CLI apply to `servers`.
 */
export function isTcpServerUrl(server: string): boolean {
  try {
    const bare = !server.includes("://");
    const url = new URL(bare ? `nats://${server}` : server);
    // A bare form is host[:port] alone: "nats:/h:4222" or "nats//h:4222" parsed as host "nats"
    // with a path, and the replica retried "getaddrinfo ENOTFOUND nats" for ever (a new user).
    if (bare ? /[/?#\s]/.test(server) : !["", "/"].includes(url.pathname)) return false;
    // nats: and tls: are no special schemes to URL, which takes any host there: "n1,n2" (hosts
    // joined by commas without ports, a new user's trial) was one host retried ENOTFOUND for ever.
    const host = dialledHost(url);
    const named = /^[A-Za-z0-9_.-]+$/.test(host) || /^\[[0-9A-Fa-f:.]+\]$/.test(host);
    return (url.protocol === "nats:" || url.protocol === "tls:") && named;
  } catch {
    return false;
  }
}
