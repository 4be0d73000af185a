import type { StatusHub } from "../engine/status.js";
import type { StateSyncError } from "../errors.js";
import {
  damagedError,
  queueFailed,
  recordOf,
  type PendingOp,
  type QueuedInfo,
} from "./pending-op.js";
import type { PendingQueue, PendingRecord, PendingStore } from "./pending-store.js";
import { StoreWrites } from "./store-writes.js";

/**
 * The records of an offline queue in its store, one per persisted op (`OfflineQueue`, invariants
 * 4 and 5): every write is tracked by {@link StoreWrites}, so nothing waits long for a store that
 * does not answer, and is issued at once, in the order of the changes (the store applies one
 * record's writes in the order they were called: the `PendingQueue` contract).
 */
export class QueueRecords {
  private queue: PendingQueue | undefined;
  private readonly writes = new StoreWrites();

  constructor(
    private readonly status: StatusHub,
    /** The model version the records of this session's updates say (`PendingRecord.mv`). */
    private readonly mv: number,
  ) {}

  /** Whether a store was opened. */
  get enabled(): boolean {
    return this.queue !== undefined;
  }

  /** The store's durability (see `PendingQueue.durable`). */
  get durable(): boolean {
    return this.queue?.durable ?? false;
  }

  /**
   * Takes the queue of `(key, owner)` and loads it; writes go to it from then on. Damaged records
   * come as one `CORRUPT_PENDING` error, for the queue to report. Rejects as `store.open` and
   * `load` do (the queue is released then).
   */
  async open(
    store: PendingStore,
    key: string,
    owner: string,
  ): Promise<{
    records: PendingRecord[];
    nextSeq: number;
    damaged: StateSyncError | undefined;
    origin: string;
  }> {
    const queue = await store.open(key, owner);
    try {
      const { records, nextSeq, damaged = [] } = await queue.load();
      const where = { key, owner, origin: queue.origin };
      this.queue = queue;
      const error = damaged.length > 0 ? damagedError(where, damaged) : undefined;
      return { records, nextSeq, damaged: error, origin: queue.origin };
    } catch (e) {
      await queue.close().catch(() => undefined);
      throw e;
    }
  }

  /**
   * Stores a new op's record: `op.stored` settles with the write, `op.recorded` once it is. The
   * result is what the update's `queued` tells; it rejects `QUEUE_FAILED` when the write fails,
   * after calling `unqueue`, unless the update was sent already (`OfflineQueue`, invariant 5:
   * the log decides its outcome, it is only not durable) or left the queue meanwhile.
   */
  put(op: PendingOp, unqueue: (error: StateSyncError) => void): Promise<QueuedInfo> {
    op.stored = this.writes.track(this.queue!.put(recordOf(op, this.mv)));
    op.stored.then(() => (op.recorded = true)).catch(() => undefined);
    return op.stored.then(
      () => ({ id: op.seq, durable: this.durable }),
      (e: unknown) => {
        const error = queueFailed(e);
        if (op.attempts > 0 || op.state === "sending") {
          op.persisted = false; // not stored: close() must not say it stays queued
          if (!this.status.closed) this.status.report(error);
          return { id: op.seq, durable: false };
        }
        if (op.state !== "done") unqueue(error); // else discarded or cleared meanwhile
        throw error;
      },
    );
  }

  /**
   * Stores an op's record again (its binding or origin changed: `log-binding.ts`); `op.stored`
   * settles with the write. A failure is reported; the record keeps what it held (a later open
   * binds it, or sets it aside, again).
   */
  rewrite(op: PendingOp): void {
    if (!op.persisted || !this.queue) return;
    op.stored = this.writes.track(this.queue.put(recordOf(op, this.mv)));
    op.stored.catch((e: unknown) => {
      if (!this.status.closed) this.status.report(queueFailed(e));
    });
  }

  /**
   * Deletes the records of the persisted `ops`, at once, even while a put is held up; resolves
   * once done, or once the wait for the store ran out. A failure is reported: the record stays,
   * and a restart drops it as applied (or it was refused: pushed again).
   */
  async delete(ops: readonly PendingOp[]): Promise<void> {
    const seqs = ops.filter((op) => op.persisted).map((op) => op.seq);
    if (seqs.length === 0 || !this.queue) return;
    const deleted = this.writes.track(this.queue.delete(seqs)).catch((e: unknown) => {
      if (!this.status.closed) this.status.report(queueFailed(e));
    });
    await this.writes.wait(deleted);
  }

  /** Waits for `ops`' records to be stored, as long as invariant 5 allows. */
  async stored(ops: readonly PendingOp[]): Promise<void> {
    await this.writes.wait(Promise.allSettled(ops.map((op) => op.stored)));
  }

  /** Waits for the writes in flight (at most `STORE_WAIT_MS`). */
  settle(): Promise<void> {
    return this.writes.settle();
  }

  /** Releases the queue's lock. */
  async close(): Promise<void> {
    await this.queue?.close();
  }
}
