/**
 * Compile-time check (tsconfig.test.json): connections of both nats.js v2 clients and of both
 * v3 transports are assignable to core's structural `NatsConnectionLike`, and the
 * `@nats-io/jetstream` module to `JetStreamV3Module`, so `JetStreamLog` takes either line.
 */
import type * as NatsCore from "@nats-io/nats-core";
import type * as JetStreamV3 from "@nats-io/jetstream";
import type {
  JetStreamLogOptions,
  JetStreamV3Module,
  NatsConnectionLike,
  NatsV3ConnectionLike,
} from "@statesync/core";
import type { NatsConnection as TcpConnection } from "nats";
import type { NatsConnection as WsConnection } from "nats.ws";

declare const tcp: TcpConnection;
declare const ws: WsConnection;
declare const v3: NatsCore.NatsConnection;
declare const jetstreamModule: typeof JetStreamV3;

export const fromTcp: NatsConnectionLike = tcp;
export const fromWs: NatsConnectionLike = ws;
export const pending: JetStreamLogOptions["connection"] = Promise.resolve(ws);
export const fromV3: NatsV3ConnectionLike = v3;
export const v3Options: JetStreamLogOptions = {
  connection: v3,
  jetstream: jetstreamModule,
  stream: "S",
};
export const functions: JetStreamV3Module = {
  jetstream: jetstreamModule.jetstream,
  jetstreamManager: jetstreamModule.jetstreamManager,
};
