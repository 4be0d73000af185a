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
import type { JetStreamAdapter, JetStreamApi } from "./adapter.js";
import type {
  JsMsgLike,
  MsgHdrsLike,
  MsgQueryLike,
  NatsErrorLike,
  NatsStatusLike,
} from "./nats-types.js";
import type { JetStreamV3Module, NatsV3ConnectionLike, NatsV3StatusLike } from "./nats-v3-types.js";

/** A core NATS message of v3 (nats-core `Msg`, the parts used). */
interface MsgV3Like {
  readonly subject: string;
  readonly reply?: string | undefined;
  readonly data: Uint8Array;
  readonly headers?: (MsgHdrsLike & { readonly code: number }) | undefined;
}

/** A v3 connection's request (nats-core `NatsConnection.request`). */
interface Requester {
  request(
    subject: string,
    payload?: Uint8Array,
    options?: { timeout?: number; noMux?: boolean },
  ): Promise<MsgV3Like>;
}

const encoder = new TextEncoder();

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
    subscribe: nc.subscribe?.bind(nc),
    open: async (timeoutMs, domain): Promise<JetStreamApi> => {
      const d = domain === undefined ? {} : { domain };
      const jsm = await module.jetstreamManager(nc, { checkAPI: false, timeout: timeoutMs, ...d });
      const js = module.jetstream(nc, { timeout: timeoutMs, ...d });
      const apiPrefix = domain === undefined ? "$JS.API" : `$JS.${domain}.API`;
      return {
        publish: (subject, data, options) => js.publish(subject, data, options),
        orderedConsumer: (stream, o) =>
          js.consumers.get(stream, {
            filter_subjects: o.filterSubjects,
            ...(o.opt_start_seq !== undefined ? { opt_start_seq: o.opt_start_seq } : {}),
            ...(o.name_prefix !== undefined ? { name_prefix: o.name_prefix } : {}),
          }),
        streams: {
          info: (stream) => jsm.streams.info(stream),
          add: (config) => jsm.streams.add(config),
          delete: (stream) => jsm.streams.delete(stream),
          getMessage: async (stream, query) =>
            (await jsm.streams.getMessage(stream, query)) ?? undefined,
          purge: (stream, options) => jsm.streams.purge(stream, options),
          ...(jsm.streams.update ? { update: jsm.streams.update.bind(jsm.streams) } : {}),
        },
        ...(jsm.direct
          ? {
              direct: {
                getMessage: async (stream: string, query: MsgQueryLike) =>
                  (await jsm.direct!.getMessage(stream, query)) ?? undefined,
              },
            }
          : {}),
        consumers: {
          add: (stream, config) => jsm.consumers.add(stream, config),
          delete: (stream, name) => jsm.consumers.delete(stream, name),
          next: (stream, name) =>
            nextNoWait(nc as unknown as Requester, apiPrefix, stream, name, timeoutMs),
        },
      };
    },
  };
}

/** One pending message of a named consumer, or undefined (404/408: none pending). */
async function nextNoWait(
  nc: Requester,
  apiPrefix: string,
  stream: string,
  name: string,
  timeoutMs: number,
): Promise<JsMsgLike | undefined> {
  const request = encoder.encode(JSON.stringify({ batch: 1, no_wait: true }));
  // Not muxed: the message arrives on the original subject (routed to the reply inbox by
  // subscription id), which the shared request inbox cannot match (v2's `js.pull` does the same).
  const m = await nc.request(`${apiPrefix}.CONSUMER.MSG.NEXT.${stream}.${name}`, request, {
    timeout: timeoutMs,
    noMux: true,
  });
  const code = m.headers?.code ?? 0;
  if (code === 404 || code === 408) return undefined;
  const ack = parseAckSubject(m.reply ?? "");
  if (code !== 0 || ack === undefined) {
    throw Object.assign(new Error(`unexpected answer to a pull (status ${code})`), {
      code: String(code),
    });
  }
  return {
    subject: m.subject,
    seq: ack.streamSequence,
    data: m.data,
    headers: m.headers,
    info: ack,
  };
}

/**
 * Stream and delivery sequence and pending count from a JetStream reply subject (ADR-15):
 * `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>` or, newer,
 * `$JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>[.<token>]`.
 */
function parseAckSubject(
  reply: string,
): { streamSequence: number; deliverySequence: number; pending: number } | undefined {
  const t = reply.split(".");
  if (t[0] !== "$JS" || t[1] !== "ACK") return undefined;
  const base = t.length === 9 ? 5 : t.length >= 11 ? 7 : -1;
  if (base < 0) return undefined;
  const [streamSequence, deliverySequence, , pending] = t.slice(base, base + 4).map(Number);
  if (!Number.isSafeInteger(streamSequence)) return undefined;
  return {
    streamSequence: streamSequence!,
    deliverySequence: deliverySequence ?? 0,
    pending: pending ?? 0,
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
