/**
 * Compile-time check (tsconfig.test.json): connections of both nats.js v2 clients are assignable
 * to core's structural `NatsConnectionLike`, so `JetStreamLog` takes either.
 */
import type { JetStreamLogOptions, NatsConnectionLike } from "@statesync/core";
import type { NatsConnection as TcpConnection } from "nats";
import type { NatsConnection as WsConnection } from "nats.ws";

declare const tcp: TcpConnection;
declare const ws: WsConnection;

export const fromTcp: NatsConnectionLike = tcp;
export const fromWs: NatsConnectionLike = ws;
export const pending: JetStreamLogOptions["connection"] = Promise.resolve(ws);
