/**
 * The JetStream implementation of the log port, written against structural connection types
 * (no runtime import of `nats` or `nats.ws`): hand it a connection from either client.
 */
export {
  JetStreamLog,
  HEADER_ALLOWANCE_BYTES,
  MAX_MESSAGE_ID_BYTES,
  type JetStreamLogOptions,
} from "./jetstream-log.js";
export { createdStreamConfig, streamConfigProblems } from "./stream-config.js";
export type { PointReadMode } from "./point-reads.js";
export { compareServerVersions, MIN_CLUSTERED_SHARED_VERSION } from "./server-version.js";
export { isValidKey, isValidStreamName } from "./layout.js";
export type {
  NatsConnectionLike,
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
} from "./nats-types.js";
