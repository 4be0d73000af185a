/**
 * The one seam between `JetStreamLog` and a NATS client line: {@link JetStreamAdapter}.
 *
 * The log and its parts call only this interface; two implementations bridge the client lines:
 * `natsV2Adapter` (`nats` 2.x / `nats.ws` 1.x: `nc.jetstream()`) and `natsV3Adapter`
 * (`@nats-io/transport-node` / `@nats-io/nats-core` 3.x with `@nats-io/jetstream`'s
 * `jetstream(nc)` and `jetstreamManager(nc)`). Core imports neither line at runtime: a v3
 * connection comes with the module's functions from the caller (`JetStreamLogOptions.jetstream`,
 * or the runtime packages, see their READMEs), as {@link JetStreamV3Module}.
 *
 * Contract of an adapter (both implementations keep it):
 * 1. Shapes are v2's: status events carry `permissionContext`; `getMessage` and `next` answer
 *    undefined for "nothing there"; `status()` of consumer messages may be a promise or not
 *    (callers `await` it).
 * 2. Errors are the client line's own; `toStateSyncError` reads both lines through
 *    `natsErrorInfo` (nats-errors.ts), which maps v3's error classes to v2's codes (10071 wrong
 *    last sequence, `PERMISSIONS_VIOLATION`, `TIMEOUT`, `503` no responders, ...). Mapping at
 *    that one place also covers errors that never pass through an adapter (a v3 `connect()`
 *    promise that rejects, a consumer iterator that ends with an error).
 * 3. An adapter never closes the connection.
 */
import { StateSyncError } from "../errors.js";
import { natsV2Adapter } from "./adapter-v2.js";
import { natsV3Adapter } from "./adapter-v3.js";
import type {
  ConsumerConfigLike,
  ConsumerInfoLike,
  ConsumerLike,
  JsMsgLike,
  MsgQueryLike,
  NatsConnectionLike,
  NatsStatusLike,
  NatsV2ConnectionLike,
  OrderedConsumerOptionsLike,
  PubAckLike,
  PublishOptionsLike,
  ServerInfoLike,
  StoredMsgLike,
  StreamConfigLike,
  StreamInfoLike,
  SubscribeLike,
} from "./nats-types.js";
import type { JetStreamV3Module, NatsV3ConnectionLike } from "./nats-v3-types.js";

/** The JetStream calls of the log, opened on one connection (see {@link JetStreamAdapter.open}). */
export interface JetStreamApi {
  /** A publish with `Nats-Msg-Id` (`msgID`) and expectations; the ack or the client's error. */
  publish(subject: string, data: Uint8Array, options: PublishOptionsLike): Promise<PubAckLike>;
  /** A new ordered consumer on one subject from `opt_start_seq` (never `deliver_policy: all`). */
  orderedConsumer(stream: string, options: OrderedConsumerOptionsLike): Promise<ConsumerLike>;
  readonly streams: {
    info(stream: string): Promise<StreamInfoLike>;
    add(config: StreamConfigLike & { name: string }): Promise<StreamInfoLike>;
    delete(stream: string): Promise<boolean>;
    /** `STREAM.MSG.GET`; undefined when no message matches. */
    getMessage(stream: string, query: MsgQueryLike): Promise<StoredMsgLike | undefined>;
    /** Filtered purge: messages on `filter` below `seq`. */
    purge(stream: string, options: { filter: string; seq: number }): Promise<{ purged: number }>;
    /** A stream update (the whole configuration); absent when the client has none. */
    update?(name: string, config: StreamConfigLike): Promise<StreamInfoLike>;
    /**
     * The name of the stream that holds `subject` (`$JS.API.STREAM.NAMES` with a subject filter);
     * throws when none does (nats.js: a plain `Error`) or the server does not answer; absent
     * when the client has no such call.
     */
    find?(subject: string): Promise<string>;
  };
  /**
   * Direct get (`$JS.API.DIRECT.GET.<stream>`, streams with `allow_direct`); undefined when no
   * message matches. Absent when the client has none.
   */
  readonly direct?: {
    getMessage(stream: string, query: MsgQueryLike): Promise<StoredMsgLike | undefined>;
  };
  readonly consumers: {
    add(stream: string, config: ConsumerConfigLike): Promise<ConsumerInfoLike>;
    delete(stream: string, name: string): Promise<boolean>;
    /**
     * One pending message of the named consumer, without waiting for more; undefined when it has
     * none (v2: a `no_wait` pull; v3: a fetch of one that expires after at most 1 s).
     */
    next(stream: string, name: string): Promise<JsMsgLike | undefined>;
  };
}

/**
 * A connection of either nats.js line as the log sees it: the server's INFO, status events,
 * whether it is closed, and its JetStream API (see the module header for the contract).
 */
export interface JetStreamAdapter {
  /** Which client line it bridges. */
  readonly clientLine: "v2" | "v3";
  /** The client's own connection object (identity for per-connection memories). */
  readonly connection: object;
  /** INFO of the server currently connected, if any (version, cluster, `max_payload`). */
  readonly info: ServerInfoLike | undefined;
  /** Status events in v2's shape (`disconnect`, `reconnect`, `error` with `permissionContext`). */
  status(): AsyncIterable<NatsStatusLike> & { stop?(): void };
  closed(): Promise<void | Error>;
  isClosed(): boolean;
  /**
   * Resolves once the server answered a PING sent now (nats.js `flush()`); absent when the client
   * has none. With {@link reconnect}, how the log tells a server that stopped answering from a
   * slow request (`ConnectionGate.suspect`).
   */
  readonly flush?: (() => Promise<void>) | undefined;
  /** Bytes received so far (nats.js `stats().inBytes`): a server that sends is alive. */
  readonly receivedBytes?: (() => number) | undefined;
  /** Drops the connection and reconnects (nats.js `reconnect()`); absent when the client has none. */
  readonly reconnect?: (() => Promise<void>) | undefined;
  /**
   * Ends a reconnection attempt whose socket closed during the handshake, which nats.js would
   * wait out for its whole connect `timeout` (closed-dial.ts); true when it ended one. Absent
   * when the client has no such attempt to end.
   */
  readonly endClosedDial?: (() => boolean) | undefined;
  /**
   * A core subscription with a callback (the stream-update advisory, see `JetStreamLog`); absent
   * when the connection has none (the log then polls). Subscribing on a denied subject calls the
   * callback once with the permissions violation.
   */
  readonly subscribe?: SubscribeLike["subscribe"] | undefined;
  /**
   * Opens the JetStream client and manager with request timeout `timeoutMs` (the manager
   * without `$JS.API.INFO`: `checkAPI: false`) in JetStream domain `domain` (API prefix
   * `$JS.<domain>.API`; none: `$JS.API`). Rejects with the client's error.
   */
  open(timeoutMs: number, domain?: string): Promise<JetStreamApi>;
}

/** True for a {@link JetStreamAdapter} (made by `natsV2Adapter` or `natsV3Adapter`). */
export function isJetStreamAdapter(value: unknown): value is JetStreamAdapter {
  const v = value as Partial<JetStreamAdapter> | null;
  return (
    typeof v === "object" &&
    v !== null &&
    (v.clientLine === "v2" || v.clientLine === "v3") &&
    typeof v.open === "function"
  );
}

/** True for a nats.js v2 connection (`nats`, `nats.ws`): it has a `jetstream()` method. */
export function isNatsV2Connection(value: unknown): value is NatsV2ConnectionLike {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as { jetstream?: unknown }).jetstream === "function" &&
    !isJetStreamAdapter(value)
  );
}

/**
 * True for a nats.js v3 connection (`@nats-io/transport-node`'s `connect`, `@nats-io/nats-core`'s
 * `wsconnect`): a connection (`status`, `closed`, `isClosed`) without a `jetstream()` method.
 */
export function isNatsV3Connection(value: unknown): value is NatsV3ConnectionLike {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.jetstream !== "function" &&
    typeof v.status === "function" &&
    typeof v.closed === "function" &&
    typeof v.isClosed === "function" &&
    !isJetStreamAdapter(value)
  );
}

/**
 * The adapter of a connection the log was given: an adapter as it is, a v2 connection through
 * `natsV2Adapter`, a v3 connection through `natsV3Adapter` with `module`. Throws
 * `StateSyncError("VALIDATION")` for a v3 connection without `module`, and for anything else.
 */
export function adapterOf(
  connection: NatsConnectionLike,
  module: JetStreamV3Module | undefined,
): JetStreamAdapter {
  if (isJetStreamAdapter(connection)) return connection;
  if (isNatsV2Connection(connection)) return natsV2Adapter(connection);
  if (isNatsV3Connection(connection)) {
    if (module) return natsV3Adapter(connection, module);
    throw new StateSyncError(
      "VALIDATION",
      "a nats.js v3 connection needs @nats-io/jetstream's functions: pass " +
        'jetstream: await import("@nats-io/jetstream") (or { jetstream, jetstreamManager }), ' +
        "or the connection as natsV3Adapter(nc, { jetstream, jetstreamManager })",
    );
  }
  throw new StateSyncError(
    "VALIDATION",
    "connection must be a nats.js connection (nats, nats.ws, @nats-io/transport-node, " +
      "@nats-io/nats-core wsconnect) or a JetStreamAdapter",
  );
}

/**
 * Binds `@nats-io/jetstream`'s functions to a connection the caller hands in, before it reaches
 * a `JetStreamLog` (what `openSynchronizer` of `@statesync/node` and `@statesync/browser` do):
 * a v3 connection becomes a `natsV3Adapter`; a v2 connection or an adapter passes through; a
 * promise is bound when it resolves. `module` may be a loader, called only when a v3 connection
 * is seen (`@statesync/node` imports `@nats-io/jetstream` so); without it a v3 connection
 * throws (or, when the connection is a promise, rejects) `VALIDATION`.
 */
export function bindJetStreamModule(
  connection: NatsConnectionLike | Promise<NatsConnectionLike>,
  module?: JetStreamV3Module | (() => Promise<JetStreamV3Module>),
): NatsConnectionLike | Promise<NatsConnectionLike> {
  const bind = (nc: NatsConnectionLike): NatsConnectionLike | Promise<NatsConnectionLike> => {
    if (!isNatsV3Connection(nc)) return nc;
    if (typeof module === "function") return module().then((m) => adapterOf(nc, m));
    return adapterOf(nc, module);
  };
  return isPromise(connection) ? connection.then(bind) : bind(connection);
}

function isPromise<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown }).then === "function";
}

/**
 * The connection's adapter (`adapterOf`): at once for a connection (throws `VALIDATION`), when
 * it resolves for a promise (the gate then fails every call with that error).
 */
export function adaptedConnection(
  connection: NatsConnectionLike | Promise<NatsConnectionLike>,
  module: JetStreamV3Module | undefined,
): JetStreamAdapter | Promise<JetStreamAdapter> {
  if (typeof (connection as { then?: unknown }).then === "function") {
    return (connection as Promise<NatsConnectionLike>).then((nc) => adapterOf(nc, module));
  }
  return adapterOf(connection as NatsConnectionLike, module);
}
