import { StateSyncError } from "@statesync/core";
import { connect, type ConnectionOptions, type NatsConnection } from "nats";

/** A connection being made in the background (see {@link connectInBackground}). */
export interface BackgroundConnection {
  /** Resolves once connected; rejects on an error retrying cannot fix, or `CLOSED` on cancel. */
  readonly connection: Promise<NatsConnection>;
  /** Stops trying and closes the connection if it was made. Idempotent. */
  cancel(): Promise<void>;
}

/** Connect errors that retrying will not fix (nats.js `ErrorCode`). */
const FATAL = new Set([
  "AUTHORIZATION_VIOLATION",
  "AUTHENTICATION_EXPIRED",
  "AUTHENTICATION_TIMEOUT",
  "ACCOUNT_EXPIRED",
  "BAD_AUTHENTICATION",
  "BAD_CREDS",
  "INVALID_OPTION",
  "PERMISSIONS_VIOLATION",
]);

/**
 * Connects with `nats` over TCP and keeps trying while no server answers (jetstream-notes:
 * `connect()` rejects when no server answers, so a replica that must start offline needs its own
 * loop). Each attempt is a plain `connect()` (backoff 250 ms doubling to 5 s, with jitter); once
 * connected, nats.js reconnects by itself (`maxReconnectAttempts: -1` unless given).
 *
 * Not `waitOnFirstConnect: true`: that also retries forever, but inside `connect()`, so nothing
 * can stop it before a server answers (and its timers keep the process alive).
 */
export function connectInBackground(options: ConnectionOptions): BackgroundConnection {
  let cancelled = false;
  let wake: (() => void) | undefined;
  let made: NatsConnection | undefined;
  const cancelledError = () => new StateSyncError("CLOSED", "connecting was cancelled");

  const connection = (async () => {
    for (let attempt = 0; ; attempt++) {
      if (cancelled) throw cancelledError();
      try {
        const nc = await connect({
          maxReconnectAttempts: -1,
          ...options,
          waitOnFirstConnect: false,
        });
        if (cancelled) {
          await nc.close().catch(() => undefined);
          throw cancelledError();
        }
        made = nc;
        return nc;
      } catch (err) {
        if (cancelled) throw cancelledError();
        if (FATAL.has((err as { code?: string }).code ?? "")) throw err;
        const ms = Math.min(5_000, 250 * 2 ** Math.min(attempt, 5)) * (0.75 + Math.random() / 4);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, ms);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
    }
  })();
  connection.catch(() => undefined);

  return {
    connection,
    async cancel() {
      cancelled = true;
      wake?.();
      if (made && !made.isClosed()) await made.close();
    },
  };
}
