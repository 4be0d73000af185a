import { connectionClosedError, StateSyncError } from "../errors.js";
import type { LogConnectionStatus, LogStatusListener } from "../log.js";
import type { JetStreamAdapter } from "./adapter.js";
import { toStateSyncError } from "./nats-errors.js";
import { PullBudget } from "./pull-budget.js";

/** A running probe of {@link ConnectionGate.suspect}: its timer, and whether it ran late once. */
interface Probe {
  timer: ReturnType<typeof setTimeout>;
  late: boolean;
}

/** How late a probe's timer may run before it waits one more round for the PONG, ms. */
const LATE_MS = 500;

type PermissionListener = (context: { operation: string; subject: string }) => void;

/**
 * Holds a connection (as its {@link JetStreamAdapter}) that may not exist yet (a promise while the
 * server is unreachable) and turns its `status()` events into `online`/`offline` (nats.js
 * `disconnect` and `reconnect`) and permission-violation notices. Never closes the connection.
 *
 * `closed` (final): nats.js closed the connection for good (`closed()` resolved, or `isClosed()`
 * is true: its `maxReconnectAttempts` ran out, `nc.close()`, a fatal error), or the promise of a
 * connection failed with an error of the kind nats.js would have retried (no server answered):
 * nothing brings it back. From then on `get` throws that `CONNECTION_CLOSED` error at once (before,
 * the log said `offline` and `UNAVAILABLE` "reconnecting" for ever; a fresh-eyes trial).
 */
export class ConnectionGate {
  private nc: JetStreamAdapter | undefined;
  private failure: unknown;
  private hasFailed = false;
  private current: LogConnectionStatus = "offline";
  private ended = false;
  private iterator: { stop?(): void } | undefined;
  /** Set once the connection ended for good (`closed`, final). */
  private closedError: StateSyncError | undefined;
  private readonly statusListeners = new Set<LogStatusListener>();
  private readonly permissionListeners = new Set<PermissionListener>();
  /** Called once when the gate closes ({@link onClose}). */
  private readonly closeListeners = new Set<() => void>();
  private readonly pending: Promise<JetStreamAdapter>;
  /** Ends each wait for the pending connection (`close()`). */
  private readonly waits = new Set<(error: StateSyncError) => void>();
  /** Times the connection was lost so far (a pull can tell whether it was cut meanwhile). */
  private lost = 0;
  /** The PING of a running {@link suspect} probe, until answered or judged unanswered. */
  private probe: Probe | undefined;
  /** How much a pull of this log may ask for (pull-budget.ts). */
  readonly pulls = new PullBudget(() => this.nc?.info?.max_payload);

  /**
   * @param whyNotConnected why a pending connection is not made yet (a runtime package's
   * background connection: its last failure, or an attempt with no answer), for the error of a
   * wait that gives up on it.
   */
  constructor(
    connection: JetStreamAdapter | Promise<JetStreamAdapter>,
    private readonly whyNotConnected?: () => StateSyncError | undefined,
  ) {
    this.pending = Promise.resolve(connection);
    this.pending.then(
      (nc) => {
        if (this.ended) return;
        this.nc = nc;
        this.watch(nc);
      },
      (err: unknown) => {
        this.failure = err;
        this.hasFailed = true;
        // A promise of a connection that failed where nats.js would retry is never made now.
        const error = toStateSyncError(err, "connect to NATS");
        if (error.code === "UNAVAILABLE" || error.code === "CONNECTION_CLOSED") {
          this.end(
            connectionClosedError(`connecting failed: ${error.message}`, {
              cause: err,
              notSent: true,
            }),
          );
        }
      },
    );
  }

  /**
   * `online` while the connection is up, `offline` while it is down (also before it first
   * resolves), `closed` once it ended for good.
   */
  get status(): LogConnectionStatus {
    return this.current;
  }

  /**
   * The connection; waits at most `timeoutMs` for a pending one. Throws `UNAVAILABLE` when it
   * does not resolve in time or is disconnected now (nats.js drops a request buffered while
   * disconnected and answers TIMEOUT only after the full timeout: failing at once is faster and
   * just as true), `CONNECTION_CLOSED` once the connection ended for good, or the mapped
   * rejection (e.g. `PERMISSION_DENIED`).
   */
  async get(timeoutMs: number): Promise<JetStreamAdapter> {
    const nc = this.nc ?? (await this.wait(timeoutMs));
    // nats.js sets `isClosed()` at once on `close()`, before `closed()` resolves.
    if (!this.ended && nc.isClosed()) this.end(closedBy(undefined));
    if (this.closedError) throw this.closedError;
    if (this.current === "offline") {
      throw new StateSyncError("UNAVAILABLE", "disconnected from NATS (reconnecting)", {
        details: { notSent: true },
      });
    }
    return nc;
  }

  /**
   * Waits at most `timeoutMs` for the pending connection, and no longer than the gate is open:
   * `close()` ends the wait with `CLOSED` (before, a closed log's wait and its timer lasted the
   * full request timeout against a server that did not answer).
   */
  private async wait(timeoutMs: number): Promise<JetStreamAdapter> {
    if (this.hasFailed) throw this.closedError ?? toStateSyncError(this.failure, "connect to NATS");
    if (this.ended) throw closedGateError();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let end: ((error: StateSyncError) => void) | undefined;
    const timeout = new Promise<never>((_, reject) => {
      end = reject;
      this.waits.add(reject);
      timer = setTimeout(() => reject(this.notConnected(timeoutMs)), timeoutMs);
    });
    try {
      return await Promise.race([this.pending, timeout]);
    } catch (err) {
      throw toStateSyncError(err, "connect to NATS");
    } finally {
      clearTimeout(timer);
      if (end) this.waits.delete(end);
    }
  }

  /**
   * `UNAVAILABLE` of a wait that gave up after `timeoutMs`: it names that wait, and why there is
   * no connection, when the background connection says ({@link whyNotConnected}: refused, a name
   * that does not resolve, TLS, no answer), as its `cause` too, with its `details`
   * (`notConnected`: `StatusHub` names the cause as the replica's reason). Before, it said
   * "not connected to NATS within 5000 ms" alone, and an update that waited 30 s quoted it
   * (a new user's trial; issue 12 in the browser).
   */
  private notConnected(timeoutMs: number): StateSyncError {
    const why = this.whyNotConnected?.();
    // A promise of a connection alone (nats.js `waitOnFirstConnect`) tells nothing of why.
    const unknown = "the connection given has not resolved yet (its client tells no reason)";
    return new StateSyncError(
      "UNAVAILABLE",
      `not connected to NATS within ${timeoutMs} ms: ${why?.message ?? unknown}`,
      { cause: why, details: { ...why?.details, timeoutMs, notSent: true, notConnected: true } },
    );
  }

  /** The connection once there is one (never rejects when there is none: stays pending). */
  whenConnected(): Promise<JetStreamAdapter> {
    return this.pending.catch(() => new Promise<never>(() => undefined));
  }

  /** True once the connection was closed for good (nats.js does not reopen a closed one). */
  get connectionClosed(): boolean {
    return this.nc?.isClosed() ?? false;
  }

  /** Times the connection was lost so far. */
  get disconnects(): number {
    return this.lost;
  }

  /**
   * True when the connection was lost since {@link disconnects} read `since`, or is down now
   * (the status event of a cut may come after a pull already ended for it).
   */
  lostSince(since: number): boolean {
    return this.lost !== since || this.current === "offline" || this.connectionClosed;
  }

  /**
   * Resolves once the connection is up (at once when it is); rejects with `error` when it is not
   * within `timeoutMs`, or once the gate is closed; with `CONNECTION_CLOSED` once the connection
   * ended for good.
   */
  online(timeoutMs: number, error: StateSyncError): Promise<void> {
    if (this.current === "online") return Promise.resolve();
    if (this.closedError) return Promise.reject(this.closedError);
    if (this.ended) return Promise.reject(error);
    return new Promise<void>((resolve, reject) => {
      // `close()` ends this wait too (`waits`): its timer kept a closed replica's process alive
      // for the whole `timeoutMs` (a range read cut while the replica caught up; a trial).
      const end = (why: StateSyncError | undefined): void => {
        clearTimeout(timer);
        unwatch();
        this.waits.delete(closedByGate);
        if (why === undefined) resolve();
        else reject(why);
      };
      const closedByGate = () => end(error);
      const timer = setTimeout(() => end(error), timeoutMs);
      const unwatch = this.watchStatus((status, closed) => {
        if (status !== "offline") end(status === "online" ? undefined : (closed ?? error));
      });
      this.waits.add(closedByGate);
    });
  }

  /**
   * Called when a request got no answer within its timeout: checks that the server still answers
   * at all. Sends a PING (nats.js `flush()`); when no PONG comes within `timeoutMs` and the same
   * connection is still up, drops it (`reconnect()`), so the log says `offline` and nats.js
   * reconnects. nats.js alone notices a server that stopped answering without closing the socket
   * (a frozen process or VM, a half-open TCP connection after a laptop's sleep or a NAT timeout)
   * only after `maxPingOut` PINGs, 20 to 30 s with statesync's `pingInterval` of 10 s: until
   * then the replica said `live` while every write waited (a fresh-eyes trial). A slow request on
   * a healthy server costs one PING; a server that sent anything meanwhile (`receivedBytes`: the
   * PING may wait behind megabytes this client queued) counts as alive. One probe at a time;
   * none while offline or without `flush`/`reconnect` on the client. A connection the
   * application passed in is reconnected too: nats.js would drop it the same way after its PINGs.
   */
  suspect(timeoutMs: number): void {
    const nc = this.nc;
    const reconnect = nc?.reconnect;
    if (!nc?.flush || !reconnect || this.probe || this.ended || this.current !== "online") {
      return;
    }
    const lost = this.lost;
    const received = nc.receivedBytes?.();
    const due = Date.now() + timeoutMs;
    const expire = (): void => {
      // Late by the event loop (blocked for a while): the PONG may wait unread in the socket,
      // and timers run before I/O. One short round more lets it be read first.
      if (Date.now() - due > LATE_MS && !probe.late) {
        probe.late = true;
        probe.timer = setTimeout(expire, LATE_MS);
        return;
      }
      this.probe = undefined;
      if (this.ended || this.lost !== lost || this.current !== "online" || nc.isClosed()) return;
      // The server sent something meanwhile: alive, busy. The PING waits behind what this client
      // queued (megabytes of publishes under load), and dropping the connection lost the acks
      // in flight (a fresh-eyes trial: healthy connections flipped offline under heavy writes).
      if (received !== undefined && (nc.receivedBytes?.() ?? received) > received) return;
      reconnect().catch(() => undefined); // closed or draining meanwhile: nothing to drop
    };
    const probe: Probe = { timer: setTimeout(expire, timeoutMs), late: false };
    this.probe = probe;
    nc.flush().then(
      () => this.endProbe(probe),
      () => this.endProbe(probe), // closed meanwhile: the status says so
    );
  }

  private endProbe(probe: Probe): void {
    clearTimeout(probe.timer);
    if (this.probe === probe) this.probe = undefined;
  }

  /** Subscribes to status changes; returns an unsubscribe function. */
  watchStatus(listener: LogStatusListener): () => void {
    this.statusListeners.add(listener);
    return () => {
      this.statusListeners.delete(listener);
    };
  }

  /** Subscribes to the server's permission violations on this connection. */
  onPermissionError(listener: PermissionListener): () => void {
    this.permissionListeners.add(listener);
    return () => {
      this.permissionListeners.delete(listener);
    };
  }

  /**
   * Calls `listener` once when the gate is closed (the log's `close()`: a range read in flight
   * then ends), at once when it is already; returns the function that stops waiting.
   */
  onClose(listener: () => void): () => void {
    if (this.ended) {
      listener();
      return () => undefined;
    }
    this.closeListeners.add(listener);
    return () => {
      this.closeListeners.delete(listener);
    };
  }

  /**
   * Stops watching the connection (leaves it open), ends the waits for it (`CLOSED`) and tells
   * the {@link onClose} listeners.
   */
  close(): void {
    this.ended = true;
    if (this.probe) this.endProbe(this.probe);
    for (const end of [...this.waits]) end(closedGateError());
    this.waits.clear();
    for (const listener of [...this.closeListeners]) listener();
    this.closeListeners.clear();
    this.iterator?.stop?.();
    this.statusListeners.clear();
    this.permissionListeners.clear();
  }

  private set(status: LogConnectionStatus, error?: StateSyncError): void {
    if (this.current === status || this.ended || this.closedError) return;
    if (status !== "online") this.lost += 1;
    if (status === "closed") this.closedError = error;
    this.current = status;
    for (const listener of [...this.statusListeners]) {
      try {
        listener(status, error);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** The connection ended for good: `closed`, final (no other status follows). */
  private end(error: StateSyncError): void {
    this.set("closed", error);
  }

  private watch(nc: JetStreamAdapter): void {
    const iterator = nc.status();
    this.iterator = iterator;
    if (nc.isClosed()) this.end(closedBy(undefined));
    else this.set("online");
    nc.closed().then(
      (why) => this.end(closedBy(why)),
      (e: unknown) => this.end(closedBy(e)),
    );
    void (async () => {
      try {
        for await (const s of iterator) {
          if (this.ended) break;
          if (s.type === "disconnect") {
            this.set("offline");
            // A disconnect while offline can be a reconnection attempt whose socket closed
            // mid-handshake, which nats.js would wait on for its whole connect timeout.
            nc.endClosedDial?.();
          } else if (s.type === "reconnect") this.set("online");
          else if (s.type === "error" && s.permissionContext) {
            for (const l of [...this.permissionListeners]) l(s.permissionContext);
          }
        }
      } catch {
        // the iterator ends with the connection
      }
    })();
  }
}

/** The `CONNECTION_CLOSED` error of a connection nats.js closed, with its reason if it gave one. */
function closedBy(why: unknown): StateSyncError {
  return connectionClosedError(
    why instanceof Error
      ? `nats.js closed it after an error, as it does once maxReconnectAttempts ran out: ${why.message}`
      : "nats.js closed it without an error: nc.close() or nc.drain()",
    { cause: why, notSent: true },
  );
}

/** The error of a wait for the connection (or a read) that the log's `close()` ended. */
export function closedGateError(): StateSyncError {
  return new StateSyncError("CLOSED", "the JetStreamLog is closed");
}
