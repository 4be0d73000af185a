/**
 * The JetStream implementation of the log port, written against structural connection types
 * (no runtime import of any NATS client): hand it a connection of the nats.js v2 line (`nats`,
 * `nats.ws`) or of the v3 line (`@nats-io/transport-node`, `@nats-io/nats-core`'s `wsconnect`,
 * with `@nats-io/jetstream`'s functions), bridged by one `JetStreamAdapter` per line.
 */
export {
  JetStreamLog,
  HEADER_ALLOWANCE_BYTES,
  MAX_MESSAGE_ID_BYTES,
  type JetStreamLogOptions,
  type FanoutOptions,
} from "./jetstream-log.js";
export type { LiveVia } from "./live-follower.js";
export { DEFAULT_LIVE_PREFIX, liveSubjectOf, republishRule } from "./republish.js";
export {
  bindJetStreamModule,
  isNatsV2Connection,
  isNatsV3Connection,
  isJetStreamAdapter,
  type JetStreamAdapter,
  type JetStreamApi,
} from "./adapter.js";
export { natsV2Adapter } from "./adapter-v2.js";
export { natsV3Adapter } from "./adapter-v3.js";
export type {
  NatsV3ConnectionLike,
  NatsV3StatusLike,
  JetStreamV3Module,
  JetStreamV3ClientLike,
  JetStreamV3ManagerLike,
  ConsumerV3Like,
  OrderedConsumerV3OptionsLike,
} from "./nats-v3-types.js";
export {
  createdStreamConfig,
  streamConfigProblems,
  streamConfigWarnings,
} from "./stream-config.js";
export type { PointReadMode } from "./point-reads.js";
export { compareServerVersions, MIN_CLUSTERED_SHARED_VERSION } from "./server-version.js";
export {
  isValidKey,
  isValidStreamName,
  isValidSubjectPrefix,
  layoutIdentityPrefix,
  resolveLayout,
  subjectMatches,
  type JetStreamLayout,
} from "./layout.js";
export type {
  NatsConnectionLike,
  NatsV2ConnectionLike,
  ServerInfoLike,
  NatsStatusLike,
  NatsErrorLike,
  JetStreamClientLike,
  JetStreamManagerLike,
  StreamApiLike,
  StreamConfigLike,
  StreamInfoLike,
  StoredMsgLike,
  MsgQueryLike,
  ConsumerApiLike,
  ConsumerConfigLike,
  ConsumerInfoLike,
  MsgHdrsLike,
  PubAckLike,
  PublishOptionsLike,
  ConsumerLike,
  ConsumerMessagesLike,
  ConsumerStatusLike,
  ConsumeOptionsLike,
  FetchOptionsLike,
  OrderedConsumerOptionsLike,
  JsMsgLike,
  DeliveryInfoLike,
  CoreMsgLike,
  SubscribeLike,
  RePublishLike,
  DirectApiLike,
} from "./nats-types.js";
