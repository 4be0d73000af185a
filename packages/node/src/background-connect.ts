import { keepConnecting, type BackgroundConnection } from "@statesync/core";
import { connect, type ConnectionOptions, type NatsConnection } from "nats";

/**
 * Connects with `nats` over TCP and keeps trying while no server answers (core's
 * `keepConnecting`); once connected, nats.js reconnects by itself (`maxReconnectAttempts: -1`
 * unless given).
 *
 * Not `waitOnFirstConnect: true`: that also retries forever, but inside `connect()`, so nothing
 * can stop it before a server answers (and its timers keep the process alive).
 */
export function connectInBackground(
  options: ConnectionOptions,
): BackgroundConnection<NatsConnection> {
  return keepConnecting(
    () => connect({ maxReconnectAttempts: -1, ...options, waitOnFirstConnect: false }),
    { target: options.servers },
  );
}

export type { BackgroundConnection };
