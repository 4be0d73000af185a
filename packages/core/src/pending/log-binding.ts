import { StateSyncError } from "../errors.js";
import { randomId } from "../prng.js";
import type { PendingOp } from "./pending-op.js";

/** What the queue learns of the log's identity (`LogInfo.identity`) from the other parts. */
export interface LogIdentities {
  /** The identity of the log the replica's state comes from now (snapshot or log), if known. */
  known(): string | undefined;
  /** The identity of the local snapshot restored at this open, if one was. */
  restored(): string | undefined;
  /** The log's identity as this replica reads it from the log (its opening's, else asked). */
  read(): Promise<string>;
}

/**
 * Which log each pending update belongs to (docs/offline.md, "One log"): an update is bound to
 * the log it was queued for, the identity a local snapshot is checked by, and pushed into that
 * log only.
 *
 * Invariants:
 * 1. An update is bound when it is queued, to the log the replica's state comes from (its
 *    restored snapshot's or its log's); one queued before the replica knew its log, or stored
 *    by an older SDK without a binding, is bound at the check (2) to the log of the local
 *    snapshot restored at this open, else to the log the replica stands on, and the binding is
 *    stored with it. A binding is only ever added, never changed, except by `rebind`.
 * 2. Nothing is pushed before the check: once the replica stands on its log, the queue reads the
 *    log's identity (once per replica: a log stays one log for a replica's life, or the replica
 *    stops `LOG_REPLACED`) and sets aside every update bound to another log.
 * 3. An update set aside is not pushed and not in the optimistic view; it stays stored (listed
 *    in `pending`, `otherLog`) until the app decides: `rebindPending()`, `discard(id)`,
 *    `clearPending()`. Its caller, if still there, rejects `LOG_REPLACED`, and one
 *    `LOG_REPLACED` event (not a stall: the replica goes on with its log) names them all.
 */
export class LogBinding {
  /** The identity of the log this replica stands on, once the queue has read it. */
  private log: string | undefined;
  /** The updates set aside (invariant 3), by seq: not in the queue's ops, not in the view. */
  aside: PendingOp[] = [];

  constructor(private readonly source: LogIdentities) {}

  /** Whether the check of invariant 2 ran. */
  get checked(): boolean {
    return this.log !== undefined;
  }

  /** The log this replica stands on, once checked. */
  get current(): string | undefined {
    return this.log;
  }

  /** What a new update binds to (invariant 1); undefined while the replica knows no log. */
  forNew(): string | undefined {
    return this.log ?? this.source.known();
  }

  /** Reads the log's identity (invariant 2). Rejects as the log does: `UNAVAILABLE`, ... */
  async read(): Promise<void> {
    const log = await this.source.read();
    this.log ??= log;
  }

  /**
   * Once `read` resolved, sorts the queue's `ops` (invariants 1, 2): binds the unbound ones and
   * sets aside those of another log (their callers reject `LOG_REPLACED`). When some of this
   * session's own updates (`origin`) were set aside, its other updates, never sent (nothing is
   * before the check), and its later ones take a new origin: a seq of theirs committed would
   * otherwise count those set aside as applied. Returns the ops that stay queued, the session's
   * origin, the ops whose record must be stored again, and those set aside now.
   */
  sort(
    ops: readonly PendingOp[],
    origin: string,
  ): { ops: PendingOp[]; origin: string; store: PendingOp[]; other: PendingOp[] } {
    const log = this.log!;
    const fallback = this.source.restored() ?? log;
    const store: PendingOp[] = [];
    const other: PendingOp[] = [];
    for (const op of ops) {
      if (op.state === "done") continue;
      if (op.logIdentity === undefined) {
        op.logIdentity = fallback;
        store.push(op);
      }
      if (op.logIdentity !== log) other.push(op);
    }
    if (other.length === 0) return { ops: [...ops], origin, store, other };
    const gone = new Set(other);
    const staying = ops.filter((op) => !gone.has(op));
    let next = origin;
    if (other.some((op) => op.origin === origin)) {
      next = randomId(12);
      const storing = new Set(store);
      for (const op of staying.filter((o) => o.origin === origin)) {
        op.origin = next;
        if (!storing.has(op)) store.push(op);
      }
    }
    for (const op of other) {
      op.otherLog = true;
      op.reject(otherLogError([op], log));
    }
    this.aside = [...this.aside, ...other].sort((a, b) => a.seq - b.seq);
    return { ops: staying, origin: next, store, other };
  }

  /** Takes every update set aside, bound to this replica's log now (`rebindPending`). */
  takeAside(): PendingOp[] {
    const ops = this.aside;
    this.aside = [];
    for (const op of ops) {
      op.logIdentity = this.log;
      op.otherLog = false;
    }
    return ops;
  }

  /** `ops` (of the queue) with the updates set aside among them, by seq (`pending`). */
  withAside(ops: readonly PendingOp[]): readonly PendingOp[] {
    return this.aside.length === 0 ? ops : [...this.aside, ...ops].sort((a, b) => a.seq - b.seq);
  }

  /** Forgets the updates of `gone` (discarded, cleared) that were set aside. */
  forget(gone: ReadonlySet<PendingOp>): void {
    if (this.aside.length > 0) this.aside = this.aside.filter((op) => !gone.has(op));
  }

  /** Why the updates set aside are not pushed (the event, a `flush()` waiting for them). */
  error(ops: readonly PendingOp[] = this.aside): StateSyncError {
    return otherLogError(ops, this.log ?? "");
  }
}

/**
 * The `LOG_REPLACED` of updates set aside (invariant 3): for the event (all of them, `ops`) and
 * for one update's caller (`ops` of one). Not a stall.
 */
function otherLogError(ops: readonly PendingOp[], log: string): StateSyncError {
  const ids = ops.map((op) => op.seq);
  const queuedFor = [...new Set(ops.map((op) => op.logIdentity ?? ""))];
  const which =
    ops.length === 1 ? `pending update ${ids[0]} was` : `${ops.length} pending updates were`;
  return new StateSyncError(
    "LOG_REPLACED",
    `${which} queued for another log (${queuedFor.join(", ")}) than this replica's (${log}): ` +
      `the stream was deleted and created again, or this is another server. Not pushed; kept ` +
      `stored until rebindPending() pushes them into this log, or discard(id) or clearPending() ` +
      `removes them`,
    { details: { otherLog: true, count: ops.length, ids, queuedFor, log } },
  );
}
