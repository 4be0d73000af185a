import { isStateSyncError, StateSyncError } from "../errors.js";
import type { PendingUpdate } from "../pending/pending-op.js";
import type { SyncEvents, SyncStats, SyncStatus } from "../synchronizer-types.js";

/** Codes of problems that keep a replica from the log: what `notLiveBecause` names. */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  "UNAVAILABLE",
  "PERMISSION_DENIED",
  "STREAM_CONFIG",
  "UNSUPPORTED_SERVER",
  "CONNECTION_CLOSED",
]);

/**
 * The reason `error` gives for not being on the log: for a wait that gave up on a connection not
 * made yet (`details.notConnected`, `ConnectionGate`) the connection's own failure, its `cause`
 * (refused, no answer...), when it has one. An update that waited 30 s then names that, not the
 * opening's "not connected to NATS within 5000 ms" (a new user's trial).
 */
function reasonOf(error: StateSyncError): StateSyncError {
  const cause = error.details.notConnected === true ? error.cause : undefined;
  return cause instanceof StateSyncError ? cause : error;
}

/**
 * Status and events of one replica, derived in one place (after automerge-repo's
 * `DocumentQuery`): the other parts report (`report`, `set`, `stall`, `close`) and this part
 * decides what users see.
 *
 * Invariants:
 * 1. `stalled` and `closed` are final: once stalled only `closed` follows; once closed nothing.
 * 2. A status change is announced once (transitions are deduplicated).
 * 3. `signal` aborts exactly when `close()` is called, so parts that wait can end at once
 *    (`untilClosed`).
 * 4. Internal stall listeners run before users hear of the stall, so that waiters are rejected
 *    and the follower is stopped by the time a user reacts.
 * 5. `writable` (issue 10, case 10) is false exactly while the last thing learned about writing
 *    is a failure that will repeat ({@link blocksWrites}, an unusable log start, a configuration
 *    check that found the stream refused until one finds it usable), or once the replica is
 *    stalled or closed (final). A successful append makes it true again; so does a
 *    (re)connection that stands on the log, except after a denial or a refused model switch,
 *    which only an append that succeeds can disprove, or while a manual switch is pending
 *    (`UPGRADE_PENDING`, lifted by the switch: upgrader.ts). Its changes are announced once each, like
 *    the status's.
 * 6. The `closed` status is the last thing users hear: no event and no subscriber call follows
 *    it (work that ends later, a write or a timer, is not announced).
 */
export class StatusHub {
  private value: SyncStatus = "connecting";
  private stallError: StateSyncError | undefined;
  private readonly closing = new AbortController();
  /** `closing.signal.aborted`, kept as a field: read for every entry applied (a hot path). */
  private closedFlag = false;
  /** What {@link untilClosed} ends when the replica closes. */
  private readonly closeWaiters = new Set<() => void>();
  private readonly errorListeners = new Set<SyncEvents["error"]>();
  private readonly statusListeners = new Set<SyncEvents["status"]>();
  private readonly stallListeners = new Set<(error: StateSyncError) => void>();
  private writableValue = true;
  private writeErrorValue: StateSyncError | undefined;
  private readonly writableListeners = new Set<SyncEvents["writable"]>();
  private readonly refusedListeners = new Set<SyncEvents["refused"]>();
  private readonly drainedListeners = new Set<SyncEvents["drained"]>();

  get status(): SyncStatus {
    return this.value;
  }

  /** The error that stalled the replica, if it is stalled. */
  get stallReason(): StateSyncError | undefined {
    return this.stallError;
  }

  /** See `StateSynchronizer.writable` (invariant 5). */
  get writable(): boolean {
    return this.writableValue;
  }

  /** The failure that made `writable` false; undefined while writable. */
  get writeError(): StateSyncError | undefined {
    return this.writeErrorValue;
  }

  /** True once `close()` was called. */
  get closed(): boolean {
    return this.closedFlag;
  }

  /** True when the replica can neither read on nor write: closed or stalled. */
  get stopped(): boolean {
    return this.closed || this.stallError !== undefined;
  }

  /** Aborts when the replica closes. */
  get signal(): AbortSignal {
    return this.closing.signal;
  }

  /**
   * `work`'s outcome, or `ending()` (default {@link endError}) as soon as the replica closes
   * (invariant 3): a wait on the log (an opening, a catch-up, a `history()` read) then ends at
   * once rather than at the log's request timeout. `work` goes on; its outcome is then ignored,
   * never an unhandled rejection.
   */
  untilClosed<T>(work: Promise<T>, ending = () => this.endError()): Promise<T> {
    if (this.closedFlag) {
      work.catch(() => undefined);
      return Promise.reject(ending());
    }
    return new Promise<T>((resolve, reject) => {
      // A callback in a set, not a listener on `signal`: hundreds of operations wait at once (an
      // unconditional command in flight waits for its catch-up), and an AbortSignal with more
      // than 10 listeners makes Node print a MaxListenersExceededWarning into the app's output.
      const onClose = () => reject(ending());
      this.closeWaiters.add(onClose);
      work.then(
        (value) => (this.closeWaiters.delete(onClose), resolve(value)),
        (e: unknown) => (this.closeWaiters.delete(onClose), reject(e)),
      );
    });
  }

  /** Throws `CLOSED` after `close()`, or the stall error. */
  assertUsable(): void {
    if (this.closed) throw closedError();
    if (this.stallError) throw this.stallError;
  }

  /** The error a pending operation ends with now: the stall, or `CLOSED`. */
  endError(): StateSyncError {
    return this.stallError ?? closedError();
  }

  /** A user listener (see `StateSynchronizer.on`). Throws `VALIDATION` for an unknown event. */
  on<E extends keyof SyncEvents>(event: E, listener: SyncEvents[E]): () => void {
    const sets: { [K in keyof SyncEvents]: Set<SyncEvents[K]> } = {
      error: this.errorListeners,
      status: this.statusListeners,
      writable: this.writableListeners,
      refused: this.refusedListeners,
      drained: this.drainedListeners,
    };
    const set = Object.hasOwn(sets, event) ? (sets[event] as Set<SyncEvents[E]>) : undefined;
    if (set === undefined) {
      throw new StateSyncError("VALIDATION", `unknown event "${String(event)}"`);
    }
    if (typeof listener !== "function") {
      throw new StateSyncError("VALIDATION", "listener must be a function");
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Internal: runs when the replica stalls. */
  onStall(listener: (error: StateSyncError) => void): void {
    this.stallListeners.add(listener);
  }

  /**
   * Calls each of `listeners` with `state` and `revision`; a listener that throws is reported
   * (`LISTENER_FAILED`) and the others still run. A copy of the set is iterated, so a listener
   * may unsubscribe.
   */
  notify<T>(
    listeners: ReadonlySet<(state: T, revision: number) => void>,
    state: T,
    revision: number,
  ): void {
    if (this.value === "closed") return; // invariant 6
    for (const l of [...listeners]) {
      try {
        l(state, revision);
      } catch (cause) {
        this.report(
          new StateSyncError("LISTENER_FAILED", `a subscriber threw: ${String(cause)}`, { cause }),
        );
      }
    }
  }

  /** The last connection problem reported or given to `set` since the replica was `live`. */
  private why: StateSyncError | undefined;

  /**
   * Why the replica is not `live` (`connecting`, `offline`): the last connection problem
   * reported ({@link CONNECTION_CODES}: not a failed snapshot save, say, which a review saw
   * named instead), or the failure the opening gave `set`, since it was; undefined while `live`. An update that
   * times out unsent names it (before, a quick start with no server said only that it "waited
   * 30001 ms without being sent": a new user).
   */
  get notLiveBecause(): StateSyncError | undefined {
    return this.value === "live" ? undefined : this.why;
  }

  /** Reports a problem that rejects no call. A listener that throws is ignored. */
  report(error: StateSyncError): void {
    if (this.value === "closed") return; // invariant 6
    if (this.value !== "live" && CONNECTION_CODES.has(error.code)) this.why = reasonOf(error);
    for (const l of [...this.errorListeners]) {
      try {
        l(error);
      } catch {
        // An error listener that throws has nowhere left to report to.
      }
    }
  }

  /** A pending update was refused and dropped (`pending/offline-queue.ts`). */
  refused(error: StateSyncError, update: PendingUpdate): void {
    if (this.value === "closed") return;
    for (const l of [...this.refusedListeners]) this.call("refused", () => l(error, update));
  }

  /** The pending queue became empty. */
  drained(): void {
    if (this.value === "closed") return;
    for (const l of [...this.drainedListeners]) this.call("drained", () => l());
  }

  /** Moves to `status` unless the replica is stalled or closed (invariant 1); `why`: the cause. */
  set(status: SyncStatus, why?: StateSyncError): void {
    if (why) this.why = reasonOf(why);
    else if (status !== this.value && (status === "live" || this.value === "live"))
      this.why = undefined;
    if (this.value === status || this.value === "closed") return;
    if (this.value === "stalled" && status !== "closed") return;
    this.value = status;
    for (const l of [...this.statusListeners]) this.call("status", () => l(status));
  }

  /** A write failed with `error`: one that will repeat makes the replica not writable. */
  writeFailed(error: unknown): void {
    if (blocksWrites(error)) this.setWritable(false, error);
  }

  /** Writes cannot succeed for now, for the reason `error` gives (invariant 5). */
  cannotWrite(error: StateSyncError): void {
    this.setWritable(false, error);
  }

  /** Writable again when a failure of `code` made it not writable (that refusal is over). */
  refusalLifted(code: StateSyncError["code"]): void {
    if (this.writeErrorValue?.code === code) this.setWritable(true, undefined);
  }

  /** An append succeeded: writable (unless stopped). */
  wrote(): void {
    this.setWritable(true, undefined);
  }

  /**
   * The replica stands on the log again after a (re)connection: writable, unless the last
   * failure was a denial or a refused model switch (`upgrader.ts`), which no read can disprove
   * (invariant 5).
   */
  reconnected(): void {
    const last = this.writeErrorValue;
    if (last?.code === "PERMISSION_DENIED" || last?.details.upgradeRefused === true) return;
    if (last?.code === "UPGRADE_PENDING") return; // lifted by the switch (upgrader.ts)
    this.setWritable(true, undefined);
  }

  private setWritable(writable: boolean, error: StateSyncError | undefined): void {
    if ((this.stopped && writable) || this.value === "closed") return;
    if (this.writableValue === writable && this.writeErrorValue === error) return;
    const changed = this.writableValue !== writable;
    this.writableValue = writable;
    this.writeErrorValue = error;
    if (!changed) return; // a new reason while still not writable: no event
    for (const l of [...this.writableListeners]) this.call("writable", () => l(writable, error));
  }

  /** Runs a user listener; one that throws is reported as `LISTENER_FAILED`. */
  private call(what: string, run: () => void): void {
    try {
      run();
    } catch (cause) {
      this.report(
        new StateSyncError("LISTENER_FAILED", `a ${what} listener threw: ${String(cause)}`, {
          cause,
        }),
      );
    }
  }

  /** Stops the replica at its last good revision: reads go on, updates reject with `error`. */
  stall(error: StateSyncError): void {
    if (this.stopped) return;
    this.stallError = error;
    for (const l of this.stallListeners) l(error);
    this.report(error);
    this.set("stalled");
    this.setWritable(false, error);
  }

  /**
   * Stalls the replica when `error` says its log is gone (`LOG_REPLACED`, issue 10, case 3) or
   * its log's connection ended for good (`CONNECTION_CLOSED`): nothing it could do on that log
   * is right, or possible, any more, whichever part met the error.
   */
  fatal(error: unknown): void {
    if (isStateSyncError(error, "LOG_REPLACED") || isStateSyncError(error, "CONNECTION_CLOSED")) {
      this.stall(error);
    }
  }

  /** Marks the replica closed (the `closed` status itself comes last, from `finish`). */
  close(): void {
    const error = closedError();
    this.closedFlag = true;
    this.closing.abort(error);
    for (const onClose of this.closeWaiters) onClose();
    this.closeWaiters.clear();
    this.setWritable(false, error);
  }

  /** Announces `closed` once everything is released. */
  finish(): void {
    this.set("closed");
  }
}

/**
 * True for a write failure that the next write would meet again: a denial (`PERMISSION_DENIED`),
 * a log that is gone (`LOG_REPLACED`) or whose connection ended for good (`CONNECTION_CLOSED`),
 * a stream configuration or server the log refuses (`STREAM_CONFIG`, `UNSUPPORTED_SERVER`). Not
 * for failures of one update (`VALIDATION`, `PAYLOAD_TOO_LARGE`, `RETRY_LIMIT`, `ABORTED`) nor
 * passing ones (`UNAVAILABLE`, `UNKNOWN_OUTCOME`: the status says `offline` while the log cannot
 * be reached).
 */
export function blocksWrites(error: unknown): error is StateSyncError {
  return (
    error instanceof StateSyncError &&
    (error.code === "PERMISSION_DENIED" ||
      error.code === "LOG_REPLACED" ||
      error.code === "CONNECTION_CLOSED" ||
      error.code === "STREAM_CONFIG" ||
      error.code === "UNSUPPORTED_SERVER")
  );
}

/** The `CLOSED` error of a closed replica. */
export function closedError(): StateSyncError {
  return new StateSyncError("CLOSED", "the synchronizer is closed");
}

/** Counters of a new replica, all zero (see `StateSynchronizer.stats`). */
export function emptyStats(): SyncStats {
  return {
    entriesFetched: 0,
    entriesApplied: 0,
    entriesSkipped: 0,
    bytesFetched: 0,
    appends: 0,
    conflicts: 0,
    attempts: 0,
    resends: 0,
    snapshotsSaved: 0,
    snapshotsRestored: 0,
    compactions: 0,
  };
}
