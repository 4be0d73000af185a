/**
 * The {@link JetStreamAdapter} of the nats.js v3 line (`@nats-io/transport-node`'s `connect`,
 * `@nats-io/nats-core`'s `wsconnect`, with `@nats-io/jetstream` 3.x), and the reading of v3's
 * errors as v2's codes. What differs from v2 and how it is bridged is listed in
 * nats-v3-types.ts; in short:
 * - the client and manager come from the caller's `jetstream(nc)` / `jetstreamManager(nc)`;
 * - ordered consumers take `filter_subjects` (one string, sent as `filter_subject`);
 * - `getMessage` answers `null` for no message (kept as undefined);
 * - one pending message of a named consumer is one `no_wait` request to
 *   `$JS.API.CONSUMER.MSG.NEXT.<stream>.<name>`, as v2's `js.pull` sends it (v3 has no `pull`; a
 *   `fetch` would wait for its expiry when the request is denied, and needs CONSUMER.INFO); the
 *   stream sequence is read from the reply subject (`$JS.ACK...`, ADR-15's both formats); the
 *   request is not muxed (its own inbox subscription under the connection's `inboxPrefix`);
 * - status events of type `"error"` carry the error: a `PermissionViolationError` becomes v2's
 *   `permissionContext`;
 * - {@link natsV3ErrorInfo} maps v3's error classes (by `name`, which v3 sets on each) to v2's
 *   codes, for `toStateSyncError`.
 */
import { endClosedDial } from "./closed-dial.js";
import type { JetStreamAdapter } from "./adapter.js";
import type { NatsErrorLike, NatsStatusLike } from "./nats-types.js";
import type { JetStreamV3Module, NatsV3ConnectionLike, NatsV3StatusLike } from "./nats-v3-types.js";

type ApiModule = typeof import("./adapter-v3-api.js");
let apiModule: Promise<ApiModule> | undefined;

/**
 * adapter-v3-api.ts, loaded once (a failed load, which the log reads as `UNAVAILABLE` and
 * retries, is tried again next time): an app on the v2 line never loads it.
 */
function loadApi(): Promise<ApiModule> {
  apiModule ??= import("./adapter-v3-api.js").catch((err: unknown) => {
    apiModule = undefined;
    throw err;
  });
  return apiModule;
}

/**
 * Wraps a nats.js v3 connection and `@nats-io/jetstream`'s functions (the module itself, or
 * `{ jetstream, jetstreamManager }` from it). Never closes the connection.
 */
export function natsV3Adapter(
  nc: NatsV3ConnectionLike,
  module: JetStreamV3Module,
): JetStreamAdapter {
  return {
    clientLine: "v3",
    connection: nc,
    get info() {
      return nc.info;
    },
    status: () => mapStatus(nc.status()),
    closed: () => nc.closed(),
    isClosed: () => nc.isClosed(),
    flush: nc.flush?.bind(nc),
    reconnect: nc.reconnect?.bind(nc),
    endClosedDial: () => endClosedDial(nc),
    receivedBytes: nc.stats ? () => nc.stats!().inBytes : undefined,
    subscribe: nc.subscribe?.bind(nc),
    open: async (timeoutMs, domain) => (await loadApi()).openV3Api(nc, module, timeoutMs, domain),
  };
}

/** v3 status events in v2's shape: a permission violation's operation and subject kept. */
function mapStatus(
  source: AsyncIterable<NatsV3StatusLike> & { stop?(): void },
): AsyncIterable<NatsStatusLike> & { stop(): void } {
  const mapped = (async function* () {
    for await (const s of source) {
      const e = s.error as { name?: string; operation?: string; subject?: string } | undefined;
      yield {
        type: s.type,
        data: s.error ?? s,
        permissionContext:
          e?.name === "PermissionViolationError" && e.operation && e.subject
            ? { operation: e.operation, subject: e.subject }
            : undefined,
      };
    }
  })();
  return Object.assign(mapped, {
    stop: () => {
      source.stop?.();
      void mapped.return(undefined);
    },
  });
}

/** Connection error names of nats-core 3.x and the v2 code each one corresponds to. */
const CODES: Record<string, string> = {
  TimeoutError: "TIMEOUT",
  NoResponders: "503",
  ClosedConnectionError: "CONNECTION_CLOSED",
  DrainingConnectionError: "CONNECTION_DRAINING",
  ConnectionError: "CONNECTION_REFUSED",
  AuthorizationError: "AUTHORIZATION_VIOLATION",
  UserAuthenticationExpiredError: "AUTHENTICATION_EXPIRED",
};

/**
 * A nats.js v3 error read as v2's {@link NatsErrorLike}, or undefined when `err` is not one:
 * - `JetStreamApiError` (and `StreamNotFoundError`, `ConsumerNotFoundError`): `api_error` from
 *   `apiError()` (so 10071 wrong last sequence, 10059, 10037 read as in v2), `code` its status;
 * - `JetStreamNotEnabled`: what caused it (v3 reports 503 no responders so), else `"503"`;
 * - `JetStreamStatusError`: its status code (`"404"`, `"409"`, ...);
 * - `RequestError`: what caused it (a permission violation, no responders, a closed
 *   connection), `"CONNECTION_CLOSED"` for "connection closed", else no code;
 * - `PermissionViolationError`: `"PERMISSIONS_VIOLATION"` with `permissionContext`;
 * - `TimeoutError` → `"TIMEOUT"`, `NoResponders` → `"503"`, connection and authentication errors
 *   to v2's codes; `InvalidArgumentError` "max_payload size exceeded" → `MAX_PAYLOAD_EXCEEDED`.
 */
export function natsV3ErrorInfo(err: unknown, depth = 0): NatsErrorLike | undefined {
  if (!(err instanceof Error) || depth > 4) return undefined;
  const e = err as Error & {
    apiError?: () => { code: number; err_code?: number; description: string };
    code?: unknown;
    operation?: string;
    subject?: string;
  };
  const cause = (e as { cause?: unknown }).cause;
  switch (e.name) {
    case "JetStreamApiError":
    case "StreamNotFoundError":
    case "ConsumerNotFoundError": {
      const api = typeof e.apiError === "function" ? e.apiError() : undefined;
      return { code: api ? String(api.code) : undefined, message: e.message, api_error: api };
    }
    case "JetStreamNotEnabled":
      return natsV3ErrorInfo(cause, depth + 1) ?? { code: "503", message: e.message };
    case "JetStreamStatusError":
      return { code: String(e.code), message: e.message };
    case "RequestError": {
      const inner = natsV3ErrorInfo(cause, depth + 1);
      if (inner) return { ...inner, message: e.message };
      return {
        code: /connection closed/i.test(e.message) ? "CONNECTION_CLOSED" : undefined,
        message: e.message,
      };
    }
    case "PermissionViolationError":
      return {
        code: "PERMISSIONS_VIOLATION",
        message: e.message,
        permissionContext:
          e.operation && e.subject ? { operation: e.operation, subject: e.subject } : undefined,
      };
    case "InvalidArgumentError":
      return /max_payload/i.test(e.message)
        ? { code: "MAX_PAYLOAD_EXCEEDED", message: e.message }
        : undefined;
    default: {
      const code = CODES[e.name];
      return code === undefined ? undefined : { code, message: e.message };
    }
  }
}
