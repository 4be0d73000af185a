/**
 * The two nats.js client lines the JetStream log is tested over (`describe.each(CLIENT_LINES)`):
 * v2 (`nats` over TCP, `nats.ws` over WebSocket, handed in as they are) and v3
 * (`@nats-io/transport-node`'s `connect`, `@nats-io/nats-core`'s `wsconnect`, handed in with
 * `@nats-io/jetstream`'s functions as `JetStreamLogOptions.jetstream`).
 */
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { JetStreamV3Module, NatsConnectionLike } from "@statesync/core";
import { tcp, websocket } from "../helpers.js";

/** A connection of either line that a test closes. */
export type Closable = NatsConnectionLike & { close(): Promise<void>; isClosed(): boolean };

/** What a test needs of the stream admin API (both lines have these). */
export interface StreamAdmin {
  streams: {
    delete(stream: string): Promise<boolean>;
    add(config: { name: string; subjects: string[]; duplicate_window?: number }): Promise<unknown>;
  };
}

/** Connect options both lines take. */
export interface LineConnectOptions {
  user?: string;
  pass?: string;
  inboxPrefix?: string;
  reconnectTimeWait?: number;
  pingInterval?: number;
  /** How long one connection attempt may take, ms (nats.js default 20,000). */
  timeout?: number;
  /** Reconnect attempts before nats.js closes the connection for good (default here: -1, forever). */
  maxReconnectAttempts?: number;
}

export interface ClientLine {
  readonly name: "v2" | "v3";
  /** A TCP connection that reconnects quickly and forever. */
  tcp(url: string, options?: LineConnectOptions): Promise<Closable>;
  /** A WebSocket connection (Node 20: the `ws` package as global WebSocket). */
  websocket(url: string, options?: LineConnectOptions): Promise<Closable>;
  /** What `JetStreamLog` needs beside the connection on this line. */
  readonly logOptions: { jetstream?: JetStreamV3Module };
  /** The JetStream manager of a connection of this line, for test setup. */
  admin(nc: Closable): Promise<StreamAdmin>;
}

const V3_MODULE: JetStreamV3Module = { jetstream, jetstreamManager };

async function v3Tcp(url: string, options: LineConnectOptions = {}): Promise<Closable> {
  const { connect } = await import("@nats-io/transport-node");
  return connect({
    servers: url,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
    ...options,
  }) as unknown as Promise<Closable>;
}

async function v3WebSocket(url: string, options: LineConnectOptions = {}): Promise<Closable> {
  const g = globalThis as { WebSocket?: unknown };
  if (g.WebSocket === undefined) g.WebSocket = (await import("ws")).default;
  const { wsconnect } = await import("@nats-io/nats-core");
  return wsconnect({
    servers: url,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
    ...options,
  }) as unknown as Promise<Closable>;
}

export const V2: ClientLine = {
  name: "v2",
  tcp: (url, options) => tcp(url, options) as Promise<Closable>,
  websocket: (url, options) => websocket(url, options) as Promise<Closable>,
  logOptions: {},
  admin: (nc) => (nc as unknown as { jetstreamManager(): Promise<StreamAdmin> }).jetstreamManager(),
};

export const V3: ClientLine = {
  name: "v3",
  tcp: v3Tcp,
  websocket: v3WebSocket,
  logOptions: { jetstream: V3_MODULE },
  admin: (nc) => V3_MODULE.jetstreamManager(nc as never) as unknown as Promise<StreamAdmin>,
};

/** Both lines, for `describe.each`. */
export const CLIENT_LINES: readonly ClientLine[] = [V2, V3];
