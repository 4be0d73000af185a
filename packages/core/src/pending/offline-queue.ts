import { Waiters } from "../backoff.js";
import { StateSyncError } from "../errors.js";
import { randomId } from "../prng.js";
import type { CommandMap, Model } from "../model.js";
import type { RecipeRun } from "../engine/recipes.js";
import { closedError } from "../engine/status.js";
import { ChunkSender } from "./chunk-sender.js";
import { LogBinding } from "./log-binding.js";
import { OptimisticView } from "./optimistic.js";
import {
  chunkAt,
  closedWhileQueued,
  describeOp,
  newOp,
  opOfRecord,
  refusedError,
  type PendingOp,
  type PendingUpdate,
  type QueuedInfo,
} from "./pending-op.js";
import { firstSeq, type PendingStore } from "./pending-store.js";
import { QueueChanges } from "./queue-changes.js";
import { QueuePusher, type PushSteps } from "./queue-pusher.js";
import { QueueRecords } from "./queue-records.js";
import type { OfflineQueueParts } from "./queue-parts.js";
import { whenAborted } from "../abort-watch.js";

/**
 * The offline queue (docs/offline.md): pending updates, persisted through a {@link PendingStore}
 * before they count as queued, shown at once in the optimistic view, pushed in order when the
 * log can be reached, each re-run on the latest confirmed state (a rebase) by the writer.
 *
 * Invariants:
 * 1. Identity: an update's `(origin, seq)` is fixed when it is queued and stored with it; every
 *    entry carrying it says so (format 2), and replicas skip a seq of an origin they applied. So
 *    a re-send after an unknown outcome, a crash between append and removal, or a restart counts
 *    once. Each session queues under an origin drawn at `open` (never the store's, which a copy
 *    of the storage carries too): no two live queues push new updates under one origin.
 * 2. Order: one chunk at a time, in seq order (consecutive conditional updates share an entry,
 *    an unconditional command goes alone); the next chunk is sent once the one before is known
 *    committed, refused or found applied. No update overtakes one of another queue queued
 *    before it (`order`: other tabs' queues), for up to `ORDER_WAIT_MS` (push-order.ts).
 * 3. A pending update leaves the queue when the confirmed state holds it (the writer's answer,
 *    or the table of applied origins), when it is refused (`UPDATE_REFUSED`: dropped, never
 *    retried), or when it is discarded. Any other failure leaves it queued, tried again after a
 *    backoff or at once when the replica is live again: no `outcomeTimeoutMs` failure. A stall
 *    rejects the callers (and `flush()`) at once with its error; the records stay stored.
 * 4. Writes to the store are one record per change; `close()` waits for those in flight.
 * 5. A store write that does not finish (another tab holds the database: IndexedDB runs it after
 *    every earlier transaction over its stores, and a frozen or hung tab's never ends; seen in
 *    e2e) holds nothing up for long ({@link StoreWrites}): the push sends an update whose record
 *    is on its way (`queued` waits for it), a commit resolves before its record's delete got
 *    through (a restart drops an applied record), `close()` goes on. A record's delete is
 *    issued at once: the store orders one record's writes (`PendingQueue`).
 * 6. An update is pushed only into the log it was queued for ({@link LogBinding}): nothing is
 *    pushed before the check, and updates of another log are set aside (`aside`), kept stored,
 *    until the app rebinds, discards or clears them.
 */
export class OfflineQueue<S, C extends CommandMap<S>> {
  readonly view: OptimisticView<S>;
  private readonly records: QueueRecords;
  /** The origin this session queues new updates under (invariant 1). */
  private origin = "";
  /** Every origin of the ops this session held: entries of them are its own (the view). */
  private readonly origins = new Set<string>();
  private nextSeq = 1;
  private ops: PendingOp[] = [];
  private readonly binding: LogBinding;
  /** What the load could not read, reported once by `start()`. */
  private damaged: StateSyncError | undefined;
  private readonly pusher: QueuePusher;
  private readonly drainWaiters = new Waiters();
  /** `discard`, `clear` and `rebind`: one at a time, none after `close()`. */
  private readonly changes: QueueChanges;

  private readonly sender: ChunkSender<S, C>;

  constructor(private readonly p: OfflineQueueParts<S, C>) {
    this.sender = new ChunkSender(p);
    this.records = new QueueRecords(p.status, p.model.version);
    this.changes = new QueueChanges(p.status);
    this.binding = new LogBinding(p.logIdentities);
    this.view = new OptimisticView(
      p.replica,
      () => this.origins,
      () => this.ops,
      p.clientId,
      p.status,
    );
    this.pusher = new QueuePusher(p.status, this.pushSteps(), p.order, {
      appliedSeq: (origin) => p.replica.origins.get(origin)?.seq,
      onChange: (listener) => p.replica.subscribe(() => listener()),
    });
    p.status.on("status", (status) => void (status === "live" && this.pusher.wake()));
    // A refusal lifted (`upgrade()` switched the log, a configuration fixed): push at once.
    p.status.on("writable", (writable) => void (writable && this.pusher.wake()));
    // At the stall (before users hear of it), not when the push loop next looks: it may wait.
    p.status.onStall(() => (this.pusher.wake(), this.stopped()));
  }

  /** Whether a store was opened (without one, updates bypass the queue). */
  get enabled(): boolean {
    return this.records.enabled;
  }

  /** The queue's durability (see `PendingQueue.durable`). */
  get durable(): boolean {
    return this.records.durable;
  }

  /**
   * Takes the queue of `(key, owner)` and loads it (before the replica opens, so the view shows
   * it at once). Rejects `QUEUE_LOCKED` when another synchronizer holds it.
   */
  async open(store: PendingStore, key: string, owner: string): Promise<void> {
    const { records, nextSeq, damaged, origin } = await this.records.open(store, key, owner);
    this.damaged = damaged; // reported by start()
    const model = this.p.model as unknown as Model<S, CommandMap<S>>;
    // A record this model cannot run (of an older version not upgraded, or of a newer one: an
    // app rolled back) is refused when the push reaches it, with an event. Left stored, its seq
    // would count as applied once a later one of this queue is.
    this.ops = records.map((r) => opOfRecord(model, r, origin));
    this.origin = randomId(12);
    for (const op of [...this.ops, { origin: this.origin }]) this.origins.add(op.origin);
    this.nextSeq = firstSeq(nextSeq, Date.now());
  }

  /**
   * Reports damaged records, pushes what was loaded: after a macrotask (`on` listeners set), or
   * the report in `close()` if that comes first (it is the only one, and no event follows close).
   */
  start(): void {
    if (!this.damaged && this.ops.length === 0) return;
    setTimeout(() => (this.reportDamaged(), this.pusher.kick()), 0);
  }

  private reportDamaged(): void {
    if (this.damaged) this.p.status.report(this.damaged);
    this.damaged = undefined;
  }

  /** The pending updates, in queue order. */
  get pending(): PendingUpdate[] {
    const durable = this.durable;
    const ops = this.binding.withAside(this.view.unconfirmed() as readonly PendingOp[]);
    return ops.map((op) => describeOp(op, durable));
  }

  get count(): number {
    return this.view.unconfirmed().length + this.binding.aside.length;
  }

  /**
   * Queues one update: shown in the view at once, stored (named commands) before `queued`
   * resolves, pushed in order. `result` settles when it is committed or refused.
   */
  enqueue(
    kind: "update" | "command",
    run: RecipeRun,
    signal?: AbortSignal,
  ): { result: Promise<unknown>; queued: Promise<QueuedInfo> } {
    const seq = this.nextSeq++;
    const { op, result } = newOp(run, {
      origin: this.origin,
      seq,
      kind,
      logIdentity: this.binding.forNew(),
    });
    const queued = op.persisted
      ? this.records.put(op, (error) => {
          // Not queued: out of the view and the queue, its caller told.
          void this.remove([op], true)
            .then(() => this.drainedCheck())
            .catch(() => undefined);
          op.reject(error);
        })
      : Promise.resolve({ id: seq, durable: false });
    this.ops.push(op);
    this.view.changed();
    this.pusher.wake();
    // Stored: `pending` says so (`durable`), its readers hear of it (a caller may not await it).
    queued.then(() => this.view.changed()).catch(() => undefined);
    if (signal) {
      // Waits on the signal only while the update is pending (one listener per signal: abort-watch).
      const stop = whenAborted(signal, () => void this.discard(seq).catch(() => undefined));
      result.then(stop, stop);
    }
    this.pusher.kick();
    return { result, queued };
  }

  /** Resolves once the queue is empty; rejects `CLOSED` or the stall error when it never will. */
  flush(): Promise<void> {
    if (this.p.status.closed) return Promise.reject(closedError());
    if (this.count === 0) return Promise.resolve();
    if (this.p.status.stopped) return Promise.reject(this.p.status.endError());
    if (this.ops.length === 0) return Promise.reject(this.binding.error()); // only set-aside ones
    this.pusher.kick();
    this.pusher.wake();
    return this.drainWaiters.add();
  }

  /**
   * Removes one pending update that is not being sent: its caller rejects `ABORTED`. False when
   * there is none with that id, or it is being appended now (its outcome decides). In turn with
   * `clear` and `rebind` ({@link QueueChanges}); `CLOSED` after `close()`.
   */
  discard(id: number): Promise<boolean> {
    return this.changes.run(async () => {
      const op = [...this.ops, ...this.binding.aside].find((o) => o.seq === id);
      if (op?.state !== "queued") return false;
      return (await this.abort([op], `pending update ${id} was discarded`)) === 1;
    });
  }

  /**
   * Discards every pending update queued before the call that is not being sent (a user logs
   * out); resolves to how many. In turn with `discard` and `rebind`; `CLOSED` after `close()`.
   */
  clear(): Promise<number> {
    const before = this.nextSeq; // seqs are handed out in call order: later updates stay
    return this.changes.run(() => {
      const ops = [...this.binding.aside, ...this.ops];
      const clearing = ops.filter((op) => op.state === "queued" && op.seq < before);
      return this.abort(clearing, "the pending queue was cleared");
    });
  }

  /** Removes `ops` (discarded, cleared): their callers reject `ABORTED`. Resolves to how many. */
  private async abort(ops: readonly PendingOp[], message: string): Promise<number> {
    if (ops.length === 0) return 0;
    await this.remove(ops, true);
    for (const op of ops) {
      op.reject(new StateSyncError("ABORTED", message, { details: { id: op.seq } }));
    }
    this.drainedCheck();
    return ops.length;
  }

  /** Waits for the changes called before, the pushes and store writes in flight; unlocks. */
  async close(error: StateSyncError): Promise<void> {
    this.reportDamaged();
    await this.changes.settled();
    this.pusher.wake();
    await this.pusher.idle();
    await this.records.settle();
    for (const op of [...this.ops, ...this.binding.aside]) {
      op.reject(closedWhileQueued(op, error, this.durable));
    }
    this.drainWaiters.rejectAll(error);
    await this.records.close();
  }

  /** What the push loop asks of the queue (`QueuePusher`). */
  private pushSteps(): PushSteps {
    return {
      head: async () => {
        await this.dropApplied();
        return this.ops.find((op) => op.state === "queued");
      },
      anyQueued: () => this.ops.some((op) => op.state === "queued"),
      refuseInvalid: (op) => this.refuse([[op, op.invalid]]),
      logChecked: () => this.binding.checked,
      checkLog: () => this.checkLog(),
      send: async (head, cut) => {
        const chunk = cut(chunkAt(this.ops, head));
        await this.records.stored(chunk);
        const ready = chunk.filter((op) => op.state === "queued");
        if (ready.length === 0) return "sent";
        const { committed, refused, retry } = await this.sender.push(ready);
        await this.commit(committed);
        await this.refuse(refused);
        if (this.p.status.stopped || this.p.status.closed) return "stopped";
        return retry ? "retry" : "sent";
      },
      stopped: () => this.stopped(),
    };
  }

  /**
   * Invariant 6: reads the log's identity, stores the bindings made now, sets aside the updates
   * of another log. False when the log could not tell (tried again after a backoff).
   */
  private async checkLog(): Promise<boolean> {
    try {
      await this.p.status.untilClosed(this.binding.read());
    } catch (e) {
      this.p.status.fatal(e); // LOG_REPLACED stalls; anything else is tried again
      return false;
    }
    const sorted = this.binding.sort(this.ops, this.origin);
    for (const op of sorted.store) this.records.rewrite(op);
    if (sorted.other.length === 0) return true;
    [this.ops, this.origin] = [sorted.ops, sorted.origin];
    this.origins.add(this.origin);
    this.view.invalidate();
    this.p.status.report(this.binding.error(sorted.other));
    this.drainedCheck();
    return true;
  }

  /**
   * Binds the updates set aside to this replica's log and queues them again (see
   * `StateSynchronizer.rebindPending`): pushed in seq order with the others, after those being
   * sent. Resolves to how many, once their new records are stored (or the store wait ran out).
   * In turn with `discard` and `clear`.
   */
  rebind(): Promise<number> {
    if (this.p.status.stopped) return Promise.reject(this.p.status.endError());
    return this.changes.run(async () => {
      // A stall while it waited its turn refuses it; a close() called after it does not (it takes
      // effect, QueueChanges invariant 3): the records are bound to this log on storage, and the
      // replica that holds the queue next pushes them (a fresh-eyes trial: it rejected CLOSED).
      if (!this.p.status.closed) this.p.status.assertUsable();
      const ops = this.binding.takeAside();
      for (const op of ops) this.records.rewrite(op);
      this.ops = [...this.ops, ...ops].sort((a, b) => a.seq - b.seq);
      this.view.invalidate();
      await this.records.stored(ops);
      this.pusher.kick();
      this.pusher.wake();
      return ops.length;
    });
  }

  /** Drops the queued updates the confirmed state already holds (a restart after a crash). */
  private async dropApplied(): Promise<void> {
    const done = this.ops.filter((op) => op.state === "queued" && this.sender.isApplied(op));
    if (done.length > 0) await this.commit(done.map((op) => [op, this.sender.confirmedResult(op)]));
  }

  private async commit(done: ReadonlyArray<[PendingOp, unknown]>): Promise<void> {
    if (done.length === 0) return;
    await this.remove(
      done.map(([op]) => op),
      false,
    );
    for (const [op, value] of done) op.resolve(value);
    this.drainedCheck();
  }

  private async refuse(refused: ReadonlyArray<[PendingOp, unknown]>): Promise<void> {
    if (refused.length === 0) return;
    await this.remove(
      refused.map(([op]) => op),
      true,
    );
    for (const [op, cause] of refused) {
      const error = refusedError(op, cause);
      op.reject(error);
      this.p.status.refused(error, describeOp(op, this.durable));
    }
    this.drainedCheck();
  }

  /** Takes ops out of the queue and the store (one delete); announces an empty queue. */
  private async remove(ops: readonly PendingOp[], unconfirmed: boolean): Promise<void> {
    if (ops.length === 0) return;
    const gone = new Set(ops);
    for (const op of ops) op.state = "done";
    this.ops = this.ops.filter((op) => !gone.has(op));
    this.binding.forget(gone);
    if (unconfirmed) this.view.invalidate();
    else this.view.changed();
    // At once, even while a put is held up: the store applies a record's writes in the order
    // they were called (the PendingQueue contract), also after close().
    await this.records.delete(ops);
  }

  /** Announces an empty queue, once its callers have been told (call after settling them). */
  private drainedCheck(): void {
    if (this.ops.length > 0) return;
    if (this.binding.aside.length > 0) {
      return this.drainWaiters.rejectAll(this.binding.error());
    }
    this.drainWaiters.resolveAll();
    this.p.status.drained();
  }

  /**
   * The replica stopped: callers learn why at once, also of an update being sent (its append may
   * still land: it counts once, by its identity); the records stay stored for the next opener.
   */
  private stopped(): void {
    if (!this.p.status.stopped || this.p.status.closed) return; // close() tells its callers
    const error = this.p.status.endError();
    for (const op of this.ops) op.reject(error);
    this.drainWaiters.rejectAll(error);
  }
}
