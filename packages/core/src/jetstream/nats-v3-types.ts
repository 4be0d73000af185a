/**
 * The few parts of the nats.js v3 line (`@nats-io/nats-core`, `@nats-io/transport-node`,
 * `@nats-io/jetstream`, 3.x) that the v3 adapter uses, as structural types, so that core imports
 * nothing of it at runtime. A `NatsConnection` of `@nats-io/transport-node`'s `connect` or
 * `@nats-io/nats-core`'s `wsconnect` is assignable to {@link NatsV3ConnectionLike}, and the
 * `@nats-io/jetstream` module itself to {@link JetStreamV3Module}. Shapes from the packages'
 * `.d.ts` files (nats-core `core.d.ts`; jetstream `types.d.ts`, `jsapi_types.d.ts`) and sources
 * (`jsclient.js`, `jsmstream_api.js`, `consumer.js`, `jserrors.js`) at 3.4.0.
 *
 * Where v3 differs from v2 (what the adapter bridges):
 * - no `nc.jetstream()`: the module's `jetstream(nc)` and `jetstreamManager(nc)` functions;
 * - ordered consumer option `filter_subjects` (v2: `filterSubjects`); one string is sent as
 *   `filter_subject`, which 2.9.x needs;
 * - `ConsumerMessages.status()` answers the iterable itself (v2: a promise of it);
 * - `streams.getMessage` answers `null` for "no message found" (v2 throws 10037);
 * - no `js.pull()`: a named consumer's `next()`;
 * - errors are classes without `api_error` or string codes (`JetStreamApiError` with
 *   `code` = `err_code` and `status`, `TimeoutError`, `RequestError` with a `cause`,
 *   `PermissionViolationError`, `JetStreamNotEnabled` for 503 no responders, ...);
 * - status events of type `"error"` carry the error (`{ type, error }`), not `permissionContext`.
 */
import type {
  ConsumerConfigLike,
  ConsumerInfoLike,
  ConsumerLike,
  JsMsgLike,
  PubAckLike,
  PublishOptionsLike,
  ServerInfoLike,
  StoredMsgLike,
  StreamConfigLike,
  StreamInfoLike,
  MsgQueryLike,
  SubscribeLike,
} from "./nats-types.js";

/** A v3 connection status event (nats-core `Status`); `"error"` events carry `error`. */
export interface NatsV3StatusLike {
  readonly type: string;
  readonly error?: unknown;
}

/**
 * A nats.js v3 connection (nats-core `NatsConnection`) as the v3 adapter uses it. It has no
 * `jetstream()` method: that is how a v3 connection is told from a v2 one.
 */
export interface NatsV3ConnectionLike {
  /** INFO of the server currently connected, if any. */
  readonly info?: ServerInfoLike | undefined;
  status(): AsyncIterable<NatsV3StatusLike> & { stop?(): void };
  closed(): Promise<void | Error>;
  isClosed(): boolean;
  /** Core subscriptions (the stream-update advisory); without it the log polls. */
  subscribe?: SubscribeLike["subscribe"];
  /** A PING answered (`ConnectionGate.suspect`); without it a stale connection waits for nats.js. */
  flush?(): Promise<void>;
  /** Forces a reconnection (`ConnectionGate.suspect`). */
  reconnect?(): Promise<void>;
  /** Bytes received so far, among other counts (`ConnectionGate.suspect`). */
  stats?(): { inBytes: number };
}

/** Options of a v3 ordered consumer (`OrderedConsumerOptions`, the parts used). */
export interface OrderedConsumerV3OptionsLike {
  /** One subject: sent as `filter_subject` (2.9.x refuses `filter_subjects`). */
  filter_subjects: string;
  opt_start_seq?: number;
  name_prefix?: string;
}

/** A v3 consumer (`Consumer`): the ordered one's `fetch`/`consume`, a named one's `next`. */
export interface ConsumerV3Like extends ConsumerLike {
  /** One message (a fetch of one); `null` when none came within `expires` ms. */
  next(options?: { expires?: number }): Promise<JsMsgLike | null>;
}

/** The v3 JetStream client (`JetStreamClient` of `jetstream(nc)`, the parts used). */
export interface JetStreamV3ClientLike {
  publish(subject: string, payload?: Uint8Array, options?: PublishOptionsLike): Promise<PubAckLike>;
  readonly consumers: {
    /** A named consumer (`string`, one CONSUMER.INFO request) or a new ordered consumer. */
    get(stream: string, options?: string | OrderedConsumerV3OptionsLike): Promise<ConsumerV3Like>;
  };
}

/** The v3 JetStream manager (`JetStreamManager` of `jetstreamManager(nc)`, the parts used). */
export interface JetStreamV3ManagerLike {
  readonly streams: {
    info(stream: string): Promise<StreamInfoLike>;
    add(config: StreamConfigLike & { name: string }): Promise<StreamInfoLike>;
    delete(stream: string): Promise<boolean>;
    /** `null` when no message matches (v2 throws 10037). */
    getMessage(stream: string, query: MsgQueryLike): Promise<StoredMsgLike | null>;
    purge(stream: string, options: { filter: string; seq: number }): Promise<{ purged: number }>;
    update?(name: string, config: StreamConfigLike): Promise<StreamInfoLike>;
    /** The stream holding `subject`; throws a plain `Error` when none does. */
    find?(subject: string): Promise<string>;
  };
  readonly consumers: {
    add(stream: string, config: ConsumerConfigLike): Promise<ConsumerInfoLike>;
    delete(stream: string, name: string): Promise<boolean>;
  };
  /** Direct get; `null` when no message matches. */
  readonly direct?: {
    getMessage(stream: string, query: MsgQueryLike): Promise<StoredMsgLike | null>;
  };
}

/**
 * The two functions of `@nats-io/jetstream` the v3 adapter needs: pass the module itself
 * (`await import("@nats-io/jetstream")`) or `{ jetstream, jetstreamManager }` imported from it.
 */
export interface JetStreamV3Module {
  jetstream(
    nc: NatsV3ConnectionLike,
    options?: { timeout?: number; domain?: string },
  ): JetStreamV3ClientLike;
  jetstreamManager(
    nc: NatsV3ConnectionLike,
    options?: { timeout?: number; checkAPI?: boolean; domain?: string },
  ): Promise<JetStreamV3ManagerLike>;
}
