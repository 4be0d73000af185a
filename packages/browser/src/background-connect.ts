import {
  checkConnectInBackground,
  DEFAULT_PING_INTERVAL_MS,
  keepConnecting,
  type BackgroundConnection,
} from "@statesync/core";
import type { ConnectionOptions, NatsConnection } from "nats.ws";
import { connectWs } from "./ws-connect.js";

/**
 * Connects with `nats.ws` over WebSocket and keeps trying while no server answers (core's
 * `keepConnecting`; the browser's `online` event starts the next attempt at once). Once
 * connected, nats.ws reconnects by itself: defaults `maxReconnectAttempts: -1` and
 * `ignoreClusterUpdates: true` (do not try cluster URLs the server gossips; jetstream-notes
 * calls it `ignoreServerUpdates`, nats.ws 1.30 names it so) and `noAsyncTraces: true` (no
 * stack trace captured per request; statesync reports its own typed errors) and `pingInterval`
 * {@link DEFAULT_PING_INTERVAL_MS} (10 s: a server that stops answering without closing the
 * connection turns the replica `offline` in 20-30 s, not nats.js's 4-6 min), unless given. An
 * attempt whose WebSocket the server closes before it said anything fails at once
 * ({@link connectWs}), not after nats.ws's 20 s `timeout`. `settings.silentMs`: see core's
 * `keepConnecting` (an attempt with no answer for that long is reported; `openSynchronizer`
 * gives its `requestTimeoutMs`). Throws `VALIDATION` for options nats.ws would act on badly
 * (`timeout: -1`, an unknown key: core's `natsConnectOptionsSchema`) before the first attempt.
 */
export function connectInBackground(
  options: ConnectionOptions,
  settings: { silentMs?: number } = {},
): BackgroundConnection<NatsConnection> {
  checkConnectInBackground(options, settings);
  return keepConnecting(
    () =>
      connectWs({
        maxReconnectAttempts: -1,
        ignoreClusterUpdates: true,
        noAsyncTraces: true,
        pingInterval: DEFAULT_PING_INTERVAL_MS,
        ...options,
        waitOnFirstConnect: false,
      }),
    {
      target: options.servers,
      silentMs: settings.silentMs,
      wake: (retry) => {
        globalThis.addEventListener?.("online", retry);
        return () => globalThis.removeEventListener?.("online", retry);
      },
    },
  );
}

export type { BackgroundConnection };
