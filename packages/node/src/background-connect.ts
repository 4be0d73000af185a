import {
  checkConnectInBackground,
  DEFAULT_PING_INTERVAL_MS,
  keepConnecting,
  type BackgroundConnection,
} from "@statesync/core";
import type { ConnectionOptions, NatsConnection } from "nats";
import { connectNats } from "./connect-nats.js";

/**
 * Connects with `nats` over TCP ({@link connectNats}: a refused TLS handshake says so) and keeps
 * trying while no server answers (core's `keepConnecting`); once connected, nats.js reconnects by itself (`maxReconnectAttempts: -1`
 * unless given). `pingInterval` {@link DEFAULT_PING_INTERVAL_MS} (10 s) unless given, so a server
 * that stops answering without closing the connection turns the replica `offline` in 20-30 s. `noAsyncTraces: true` unless given: nats.js otherwise captures two stack traces
 * per request (an `Error` for the request's context and one for its timeout), a large share of
 * a publish's client CPU; statesync reports its own typed errors, so the traces add nothing.
 *
 * `settings.silentMs`: see core's `keepConnecting` (an attempt with no answer for that long is
 * reported; `openSynchronizer` gives its `requestTimeoutMs`).
 *
 * Throws `VALIDATION` for options nats.js would act on badly (`timeout: -1`, an unknown key:
 * core's `natsConnectOptionsSchema`) before the first attempt.
 *
 * Not `waitOnFirstConnect: true`: that also retries forever, but inside `connect()`, so nothing
 * can stop it before a server answers (and its timers keep the process alive).
 */
export function connectInBackground(
  options: ConnectionOptions,
  settings: { silentMs?: number } = {},
): BackgroundConnection<NatsConnection> {
  checkConnectInBackground(options, settings);
  return keepConnecting(
    (signal) =>
      connectNats(
        {
          maxReconnectAttempts: -1,
          noAsyncTraces: true,
          pingInterval: DEFAULT_PING_INTERVAL_MS,
          ...options,
          waitOnFirstConnect: false,
        },
        signal,
      ),
    { target: options.servers, silentMs: settings.silentMs },
  );
}

export type { BackgroundConnection };
