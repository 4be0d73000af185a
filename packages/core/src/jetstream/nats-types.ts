/**
 * The few parts of a nats.js v2 connection that `JetStreamLog` uses, as structural types, so
 * that core imports nothing runtime-specific (after nats.js v3's runtime-neutral core). A
 * `NatsConnection` of `nats` (TCP, 2.29.x) and one of `nats.ws` (WebSocket, 1.30.x) are both
 * assignable to {@link NatsV2ConnectionLike}; the shapes follow their `.d.ts` files
 * (`lib/nats-base-client/core.d.ts`, `lib/jetstream/types.d.ts`, `consumer.d.ts`,
 * `jsapi_types.d.ts`), which both packages share. These shapes are also what the
 * `JetStreamAdapter` hands the log for either client line; the v3 line's own shapes are in
 * nats-v3-types.ts.
 */
import type { JetStreamAdapter } from "./adapter.js";
import type { NatsV3ConnectionLike } from "./nats-v3-types.js";

/** Message headers (nats.js `MsgHdrs`); `get` answers `""` for a missing header. */
export interface MsgHdrsLike {
  get(key: string): string;
}

/** Part of the server's INFO (nats.js `ServerInfo`) as of the current connection. */
export interface ServerInfoLike {
  /** Server version, e.g. `"2.9.10"`. */
  readonly version: string;
  /** Cluster name; absent on a standalone server. */
  readonly cluster?: string | undefined;
  /** Largest message the server accepts, in bytes, headers included (default 1 MiB). */
  readonly max_payload: number;
  readonly server_id?: string;
  readonly jetstream?: boolean | undefined;
}

/** A connection status event (nats.js `Status`): `type` is `"disconnect"`, `"reconnect"`, ... */
export interface NatsStatusLike {
  readonly type: string;
  readonly data: unknown;
  readonly permissionContext?: { operation: string; subject: string } | undefined;
}

/** The error nats.js throws (`NatsError`): match on `code` and `api_error.err_code`. */
export interface NatsErrorLike {
  readonly code?: string;
  readonly message: string;
  readonly api_error?: { code: number; err_code?: number; description: string } | undefined;
  readonly permissionContext?: { operation: string; subject: string } | undefined;
}

/** Acknowledgement of a JetStream publish (nats.js `PubAck`). */
export interface PubAckLike {
  readonly stream: string;
  /** Stream sequence the message was stored at (the original one for a duplicate). */
  readonly seq: number;
  readonly duplicate: boolean;
}

/** Options of a JetStream publish (nats.js `JetStreamPublishOptions`, the parts used). */
export interface PublishOptionsLike {
  /** `Nats-Msg-Id`: deduplicated within the stream's `duplicate_window`. */
  msgID?: string;
  /** Milliseconds to wait for the acknowledgement. */
  timeout?: number;
  expect?: {
    /** `Nats-Expected-Last-Sequence`. */
    lastSequence?: number;
    /** `Nats-Expected-Last-Subject-Sequence`. */
    lastSubjectSequence?: number;
  };
}

/** Where a delivered JetStream message sits (nats.js `DeliveryInfo`). */
export interface DeliveryInfoLike {
  readonly streamSequence: number;
  /** 1, 2, 3, … per server consumer: a jump means the client lost deliveries. */
  readonly deliverySequence: number;
  /** The server consumer's name (absent from point reads). */
  readonly consumer?: string;
  /** Messages left in the consumer after this one. */
  readonly pending: number;
}

/** A message delivered by a consumer (nats.js `JsMsg`). */
export interface JsMsgLike {
  readonly subject: string;
  /** The stream sequence. */
  readonly seq: number;
  readonly data: Uint8Array;
  readonly headers: MsgHdrsLike | undefined;
  readonly info: DeliveryInfoLike;
}

/**
 * A consumer status notification (nats.js v2 `ConsumerStatus`, v3 `ConsumerNotification`), e.g.
 * `"stream_not_found"`, `"ordered_consumer_recreated"`.
 */
export interface ConsumerStatusLike {
  readonly type: string;
}

/** The iterator `fetch` and `consume` return (nats.js `ConsumerMessages`). */
export interface ConsumerMessagesLike extends AsyncIterable<JsMsgLike> {
  stop(err?: Error): void;
  close(): Promise<void | Error>;
  closed(): Promise<void | Error>;
  /** v2 answers a promise of the notifications, v3 the iterable itself: `await` it. */
  status(): Promise<AsyncIterable<ConsumerStatusLike>> | AsyncIterable<ConsumerStatusLike>;
}

/** Options of `fetch` (nats.js `FetchMessages`). */
export interface FetchOptionsLike {
  max_messages?: number;
  /** Milliseconds a pull request waits for messages; at least 1000. */
  expires?: number;
}

/** Options of `consume` (nats.js `ConsumeMessages`). */
export interface ConsumeOptionsLike extends FetchOptionsLike {
  callback?: (msg: JsMsgLike) => void;
}

/** An ordered consumer (nats.js `Consumer` from `js.consumers.get(stream, opts)`). */
export interface ConsumerLike {
  fetch(options?: FetchOptionsLike): Promise<ConsumerMessagesLike>;
  consume(options?: ConsumeOptionsLike): Promise<ConsumerMessagesLike>;
  delete(): Promise<boolean>;
}

/**
 * Options of an ordered consumer (nats.js `OrderedConsumerOptions`). On 2.9.x `filterSubjects`
 * must be one string; never pass `deliver_policy: "all"` (jetstream-notes "Reading").
 */
export interface OrderedConsumerOptionsLike {
  filterSubjects: string;
  opt_start_seq?: number;
  /** Prefix of the consumer names the client generates. */
  name_prefix?: string;
  /** Milliseconds of inactivity after which the server deletes the consumer. */
  inactive_threshold?: number;
}

/** The JetStream client (nats.js `JetStreamClient`, the parts used). */
export interface JetStreamClientLike {
  publish(subject: string, payload?: Uint8Array, options?: PublishOptionsLike): Promise<PubAckLike>;
  /**
   * One message from the named pull consumer (`$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`);
   * `expires` 0 asks `no_wait`: rejects with `code === "404"` when none is pending.
   */
  pull(stream: string, consumer: string, expires?: number): Promise<JsMsgLike>;
  readonly consumers: {
    get(stream: string, options: OrderedConsumerOptionsLike): Promise<ConsumerLike>;
  };
}

/** A stream configuration (nats.js `StreamConfig`); durations in nanoseconds. */
export interface StreamConfigLike {
  name?: string;
  subjects?: string[];
  retention?: string;
  storage?: string;
  max_msgs?: number;
  max_bytes?: number;
  /** Nanoseconds; 0 = no limit. */
  max_age?: number;
  max_msgs_per_subject?: number;
  /** Bytes; -1 = no limit. */
  max_msg_size?: number;
  discard?: string;
  num_replicas?: number;
  /** Nanoseconds. */
  duplicate_window?: number;
  allow_rollup_hdrs?: boolean;
  deny_delete?: boolean;
  deny_purge?: boolean;
  sealed?: boolean;
  mirror?: unknown;
  sources?: unknown[] | undefined;
  /** 2.10: stored messages' subjects rewritten from `src` to `dest`. */
  subject_transform?: { src?: string; dest?: string } | undefined;
  description?: string;
  /** RePublish: each stored message on `src` is sent again on `dest` (docs/fanout.md). */
  republish?: RePublishLike | undefined;
  /** Direct get (`$JS.API.DIRECT.GET.<stream>`) answered by any replica. */
  allow_direct?: boolean;
  /** 2.11: per-message TTLs (a message may expire out of the middle of the stream). */
  allow_msg_ttl?: boolean;
}

/** A stream's RePublish rule (nats-server 2.9+; one per stream). */
export interface RePublishLike {
  /** Subjects of the stream whose messages are republished (wildcards allowed). */
  src?: string;
  /** Core NATS subject(s) they are sent on; must not overlap the stream's subjects. */
  dest: string;
  /** Send headers only (`Nats-Msg-Size` instead of the data). */
  headers_only?: boolean;
}

/** Stream information (nats.js `StreamInfo`). */
export interface StreamInfoLike {
  readonly config: StreamConfigLike;
  /** Creation time (RFC 3339, nanoseconds); a recreated stream has a new one. */
  readonly created: string;
  readonly state: {
    readonly messages: number;
    readonly first_seq: number;
    readonly last_seq: number;
    /** Sequences between the first and the last that hold no message (absent when none). */
    readonly num_deleted?: number;
  };
}

/** A message read directly from a stream (nats.js `StoredMsg`). */
export interface StoredMsgLike {
  readonly subject: string;
  readonly seq: number;
  readonly header: MsgHdrsLike;
  readonly data: Uint8Array;
}

/**
 * A `STREAM.MSG.GET` query: by sequence, the last message on a subject, or (server 2.9+) the
 * first message on a subject at or after `seq`.
 */
export type MsgQueryLike = { seq: number; next_by_subj?: string } | { last_by_subj: string };

/** The stream part of the JetStream manager (nats.js `StreamAPI`). */
export interface StreamApiLike {
  info(stream: string): Promise<StreamInfoLike>;
  add(config: StreamConfigLike): Promise<StreamInfoLike>;
  /** Updates a stream's configuration (the whole configuration is sent). */
  update?(name: string, config: StreamConfigLike): Promise<StreamInfoLike>;
  /** The stream holding `subject`; nats.js throws a plain `Error` when none does. */
  find?(subject: string): Promise<string>;
  delete(stream: string): Promise<boolean>;
  getMessage(stream: string, query: MsgQueryLike): Promise<StoredMsgLike>;
  purge(stream: string, options: { filter: string; seq: number }): Promise<{ purged: number }>;
}

/**
 * A consumer configuration (nats.js `ConsumerConfig`, the parts used); durations in nanoseconds.
 * Policies are the server's strings (`"none"`, `"by_start_sequence"`, `"last_per_subject"`).
 */
export interface ConsumerConfigLike {
  name?: string;
  filter_subject?: string;
  ack_policy?: string;
  deliver_policy?: string;
  opt_start_seq?: number;
  mem_storage?: boolean;
  num_replicas?: number;
  inactive_threshold?: number;
}

/** What creating a consumer answers (nats.js `ConsumerInfo`, the parts used). */
export interface ConsumerInfoLike {
  readonly name: string;
  /** Messages matching the filter from the start position that are not delivered yet. */
  readonly num_pending: number;
}

/** The consumer part of the JetStream manager (nats.js `ConsumerAPI`). */
export interface ConsumerApiLike {
  /**
   * Creates a consumer. With a `name` and one `filter_subject` the request goes to
   * `$JS.API.CONSUMER.CREATE.<stream>.<name>.<filter>` (server 2.9+).
   */
  add(stream: string, config: ConsumerConfigLike): Promise<ConsumerInfoLike>;
  delete(stream: string, name: string): Promise<boolean>;
}

/**
 * Direct get (nats.js `DirectStreamAPI`): `$JS.API.DIRECT.GET.<stream>`, answered by any replica
 * of a stream with `allow_direct`; rejects with code `"404"` when no message matches.
 */
export interface DirectApiLike {
  getMessage(stream: string, query: MsgQueryLike): Promise<StoredMsgLike>;
}

/** The JetStream manager (nats.js `JetStreamManager`, the parts used). */
export interface JetStreamManagerLike {
  readonly streams: StreamApiLike;
  readonly consumers: ConsumerApiLike;
  readonly direct?: DirectApiLike;
}

/** A core NATS message as a subscription callback receives it (nats.js `Msg`, the part used). */
export interface CoreMsgLike {
  readonly data: Uint8Array;
  /** Headers, when the message has any (republished entries do). */
  readonly headers?: MsgHdrsLike | undefined;
}

/**
 * A core NATS subscription with a callback (nats.js `subscribe(subject, { callback })`, alike in
 * v2 and v3): the callback gets an error when the server denies the subscription (a permissions
 * violation), after which the client closes it. nats.js subscribes again after a reconnect.
 */
export interface SubscribeLike {
  subscribe(
    subject: string,
    options: { callback: (err: Error | null, msg: CoreMsgLike) => void },
  ): { unsubscribe(): void };
}

/**
 * A nats.js v2 connection as `JetStreamLog` uses it. `status()` answers a nats.js
 * `QueuedIterator`, which has `stop()`; the log calls it when present to end its subscription.
 */
export interface NatsV2ConnectionLike {
  /** INFO of the server currently connected, if any. */
  readonly info?: ServerInfoLike | undefined;
  status(): AsyncIterable<NatsStatusLike> & { stop?(): void };
  closed(): Promise<void | Error>;
  isClosed(): boolean;
  jetstream(options?: { timeout?: number; domain?: string }): JetStreamClientLike;
  jetstreamManager(options?: {
    timeout?: number;
    checkAPI?: boolean;
    domain?: string;
  }): Promise<JetStreamManagerLike>;
  /** Core subscriptions (the stream-update advisory); without it the log polls. */
  subscribe?: SubscribeLike["subscribe"];
  /** A PING answered (`ConnectionGate.suspect`); without it a stale connection waits for nats.js. */
  flush?(): Promise<void>;
  /** Forces a reconnection (`ConnectionGate.suspect`). */
  reconnect?(): Promise<void>;
  /** Bytes received so far, among other counts (`ConnectionGate.suspect`). */
  stats?(): { inBytes: number };
}

/**
 * A connection `JetStreamLog` accepts: a nats.js v2 connection (`nats`, `nats.ws`), a nats.js v3
 * connection (`@nats-io/transport-node`, `@nats-io/nats-core`'s `wsconnect`; the log then also
 * needs `@nats-io/jetstream`'s functions, see `JetStreamLogOptions.jetstream`), or a
 * `JetStreamAdapter` (e.g. `natsV3Adapter(nc, { jetstream, jetstreamManager })`).
 */
export type NatsConnectionLike = NatsV2ConnectionLike | NatsV3ConnectionLike | JetStreamAdapter;
