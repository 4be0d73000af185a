import { StateSyncError } from "./errors.js";

/** A connection being made in the background (see {@link keepConnecting}). */
export interface BackgroundConnection<N> {
  /** Resolves once connected; rejects on an error retrying cannot fix, or `CLOSED` on cancel. */
  readonly connection: Promise<N>;
  /** Stops trying and closes the connection if it was made. Idempotent. */
  cancel(): Promise<void>;
  /**
   * Calls `listener` with each failed attempt's error, as an `UNAVAILABLE` error naming the cause
   * (an attempt failing like the one before is not repeated), starting with the last one so far.
   * Nothing after the connection is made. Returns an unsubscribe function.
   */
  errors(listener: (error: StateSyncError) => void): () => void;
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
 * Calls `connect` until it resolves (jetstream-notes: nats.js `connect()` rejects when no server
 * answers, so a replica that must start offline needs its own loop): backoff 250 ms doubling to
 * 5 s, with jitter. `wake(retry)` may start the next attempt early (the browser's `online` event)
 * and returns an unsubscribe function. Authentication and option errors are final. The runtime
 * packages' `connectInBackground` wrap this with their client.
 */
export function keepConnecting<N extends { close(): Promise<void>; isClosed(): boolean }>(
  connect: () => Promise<N>,
  options: {
    wake?: (retry: () => void) => () => void;
    /** What is being connected to, for error messages: the server URL(s). */
    target?: string | readonly string[];
  } = {},
): BackgroundConnection<N> {
  let cancelled = false;
  let wake: (() => void) | undefined;
  let made: N | undefined;
  const cancelledError = () => new StateSyncError("CLOSED", "connecting was cancelled");
  const unsubscribe = options.wake?.(() => wake?.());
  const listeners = new Set<(error: StateSyncError) => void>();
  let lastError: StateSyncError | undefined;
  const failed = (err: unknown) => {
    const why = describe(err);
    if (lastError && lastError.message.endsWith(`: ${why}`)) return;
    const target = typeof options.target === "string" ? options.target : options.target?.join(", ");
    const to = target ? ` ${target}` : " the server";
    lastError = new StateSyncError("UNAVAILABLE", `cannot connect to${to}: ${why}`, {
      cause: err,
    });
    for (const l of [...listeners]) l(lastError);
  };

  const connection = (async () => {
    for (let attempt = 0; ; attempt++) {
      if (cancelled) throw cancelledError();
      try {
        const nc = await connect();
        if (cancelled) {
          await nc.close().catch(() => undefined);
          throw cancelledError();
        }
        made = nc;
        listeners.clear();
        return nc;
      } catch (err) {
        if (cancelled) throw cancelledError();
        if (FATAL.has((err as { code?: string }).code ?? "")) throw err;
        failed(err);
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
  connection.then(unsubscribe, unsubscribe).catch(() => undefined);

  return {
    connection,
    errors(listener) {
      if (made) return () => undefined;
      listeners.add(listener);
      if (lastError) listener(lastError);
      return () => listeners.delete(listener);
    },
    async cancel() {
      cancelled = true;
      wake?.();
      if (made && !made.isClosed()) await made.close();
    },
  };
}

/**
 * A connect error in words: its message, else its code, else its text. (nats.ws in a browser
 * rejects with an error whose `message` is undefined: a WebSocket error event says no more.)
 */
function describe(err: unknown): string {
  const e = err as { message?: unknown; code?: unknown } | null;
  if (typeof e?.message === "string" && e.message !== "") return e.message;
  if (typeof e?.code === "string" && e.code !== "") return e.code;
  const text = String(err);
  return text === "[object Object]" || text === "" ? "the connection failed" : text;
}
