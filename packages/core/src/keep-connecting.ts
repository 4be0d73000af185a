import { connectFailure, serversText } from "./connect-failure.js";
import { StateSyncError } from "./errors.js";

/**
 * How often, in ms, the connections statesync makes itself (`servers` in the runtime packages)
 * PING the server unless given `pingInterval`: nats.js's default is 2 min, and a connection is
 * stale after 2 PINGs without answer (`maxPingOut`), so a server that stops answering without
 * closing the socket (a frozen VM, a half-open TCP connection after a NAT timeout or a laptop's
 * sleep) left a replica `live` for 4 to 6 minutes, its writes failing with timeouts. At 10 s it
 * says `offline` after 20 to 30 s, for one PING of a few bytes per 10 s per connection (a log
 * with a request left unanswered probes sooner: `ConnectionGate.suspect`).
 */
export const DEFAULT_PING_INTERVAL_MS = 10_000;

/** A connection being made in the background (see {@link keepConnecting}). */
export interface BackgroundConnection<N> {
  /** Resolves once connected; rejects on an error retrying cannot fix, or `CLOSED` on cancel. */
  readonly connection: Promise<N>;
  /** Stops trying and closes the connection if it was made. Idempotent. */
  cancel(): Promise<void>;
  /**
   * Calls `listener` with each failed attempt's error, as an `UNAVAILABLE` error naming the cause
   * (an attempt failing like the one before is not repeated; a first attempt still without an
   * answer after `silentMs` too), starting with the last one so far.
   * Nothing after the connection is made. Returns an unsubscribe function.
   */
  errors(listener: (error: StateSyncError) => void): () => void;
  /**
   * Why there is no connection (yet): the attempt in flight when none failed before it, or when
   * it has had no answer for `silentMs` (a frozen server), as `UNAVAILABLE` "no answer within N
   * ms" (`details.noAnswer`); else the last failed attempt's error. Undefined once connected or
   * cancelled. A wait for the connection that gives up names it (`JetStreamLog`'s
   * `whyNotConnected`), rather than only the time it waited.
   */
  whyNotConnected(): StateSyncError | undefined;
}

/** How long an attempt may go without an answer before it is reported, ms (see `silentMs`). */
const SILENT_MS = 5_000;

/**
 * Calls `connect` until it resolves, passing a signal aborted by `cancel()` (jetstream-notes: nats.js `connect()` rejects when no server
 * answers, so a replica that must start offline needs its own loop): backoff 250 ms doubling to
 * 5 s, with jitter. `wake(retry)` may start the next attempt early (the browser's `online` event)
 * and returns an unsubscribe function. Each failure is typed by `connectFailure`: an
 * `UNAVAILABLE` one is retried and reported, any other (credentials or a TLS certificate the
 * server refused: `PERMISSION_DENIED`; unusable options: `VALIDATION`) is final and rejects
 * `connection` with it. The runtime packages' `connectInBackground` wrap this with their client.
 */
export function keepConnecting<N extends { close(): Promise<void>; isClosed(): boolean }>(
  connect: (signal: AbortSignal) => Promise<N>,
  options: {
    wake?: (retry: () => void) => () => void;
    /** What is being connected to, for error messages: the server URL(s). */
    target?: string | readonly string[];
    /**
     * How long the first attempt may go without an answer (a server that accepts the
     * connection and sends nothing: frozen, overloaded, not NATS) before it is reported as
     * `UNAVAILABLE` "no answer within N ms", while it goes on: give the `requestTimeoutMs` after
     * which an opening gives up waiting (default 5000). Before, nothing was reported until the
     * attempt's connect timeout (20 s), while a refused one was at once.
     */
    silentMs?: number;
  } = {},
): BackgroundConnection<N> {
  let cancelled = false;
  /** Aborted on cancel: an attempt in flight may stop what it can (timers of its own). */
  const aborter = new AbortController();
  let wake: (() => void) | undefined;
  let made: N | undefined;
  const cancelledError = () => new StateSyncError("CLOSED", "connecting was cancelled");
  const unsubscribe = options.wake?.(() => wake?.());
  const listeners = new Set<(error: StateSyncError) => void>();
  let lastError: StateSyncError | undefined;
  const failed = (error: StateSyncError) => {
    if (lastError?.message === error.message) return;
    lastError = error;
    for (const l of [...listeners]) l(lastError);
  };
  const silentMs = options.silentMs ?? SILENT_MS;
  /** When the attempt in flight started (ms since the epoch), and its report's timer. */
  let started: number | undefined;
  let silence: ReturnType<typeof setTimeout> | undefined;
  const noAnswer = (ms: number) =>
    new StateSyncError(
      "UNAVAILABLE",
      `cannot connect to ${serversText(options.target)}: no answer within ${ms} ms (a server ` +
        "that is frozen or overloaded, not a NATS server, or a network that drops the packets; " +
        "still trying)",
      { details: { noAnswer: true } },
    );
  const attemptEnded = () => {
    clearTimeout(silence);
    started = silence = undefined;
  };

  const connection = (async () => {
    for (let attempt = 0; ; attempt++) {
      if (cancelled) throw cancelledError();
      try {
        started = Date.now();
        // Only while no attempt failed: after that, the failures themselves are reported.
        if (!lastError) silence = setTimeout(() => failed(noAnswer(silentMs)), silentMs);
        let nc: N;
        try {
          nc = await connect(aborter.signal);
        } finally {
          attemptEnded();
        }
        if (cancelled) {
          await nc.close().catch(() => undefined);
          throw cancelledError();
        }
        made = nc;
        listeners.clear();
        return nc;
      } catch (err) {
        if (cancelled) throw cancelledError();
        const error = connectFailure(err, options.target);
        if (error.code !== "UNAVAILABLE") throw error;
        failed(error);
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
    whyNotConnected() {
      if (made || cancelled) return undefined;
      const inFlight = started === undefined ? undefined : Date.now() - started;
      if (inFlight !== undefined && (!lastError || inFlight >= silentMs)) return noAnswer(inFlight);
      return lastError;
    },
    async cancel() {
      cancelled = true;
      attemptEnded();
      aborter.abort();
      wake?.();
      if (made && !made.isClosed()) await made.close();
    },
  };
}
