import {
  checkPendingRecord,
  checkPendingSeqs,
  DAMAGED_CONTENT_CHARS,
  isPendingSeq,
  isStateSyncError,
  readPendingRecord,
  StateSyncError,
  type DamagedPendingRecord,
  type PendingLoad,
  type PendingQueue,
  type PendingRecord,
} from "@statesync/core";
import type { IDBPDatabase } from "idb";
import { afterFreeTime } from "./free-time-wait.js";
import { IDB_OPEN_WAIT_MS, inTransaction } from "./idb-transaction.js";

// The IndexedDB side of one open pending queue (IndexedDbPendingStore opens it): its records,
// its row, and the bounded waits for a database another tab may hold.

/** Object stores: one record per pending update, one row per queue. */
export const RECORDS = "records";
export const QUEUES = "queues";
/**
 * How long opening or loading a queue waits for IndexedDB, ms: another tab frozen or hung in a
 * transaction over these stores holds every later one (docs/offline.md, "Tabs"). Past it the
 * queue runs in memory under a new origin, and the slot is left to the next opener. The
 * database's own open is bounded by it too (an open Chromium leaves unanswered: the queue runs
 * in memory, `IndexedDbPendingStore`). Each wait is bounded alone (the open, the queue's row, the
 * first load: up to three in a row). The same bound as every open of this package's databases.
 */
export const OPEN_WAIT_MS = IDB_OPEN_WAIT_MS;

/** A queue's row: its origin and the highest seq it ever removed. */
export interface QueueRow {
  key: string;
  owner: string;
  origin: string;
  /** The highest seq ever deleted or cleared (what `nextSeq` must stay above). */
  highSeq: number;
}

/** One stored pending update. */
export interface RecordRow {
  key: string;
  owner: string;
  seq: number;
  record: unknown;
}

/**
 * One open queue: its records in IndexedDB, or in memory (not durable) from the start when
 * there is no database (`db` undefined), from the first write that failed, or from a load that
 * did not answer within `OPEN_WAIT_MS` (then under a new origin, with the lock released).
 */
export class IdbQueue implements PendingQueue {
  private closed = false;
  /** Set when the queue runs in memory (not durable). */
  private memory: Map<number, PendingRecord> | undefined;
  private memoryHigh = 0;

  constructor(
    private readonly db: IDBPDatabase | undefined,
    private readonly key: string,
    private readonly owner: string,
    private stored: string,
    private readonly warn: (e: unknown) => void,
    /** Releases the queue's lock (when the load gives the stored queue up). */
    private readonly unlock: () => void,
    private readonly onClose: () => void,
  ) {
    if (!db) this.memory = new Map();
  }

  /** Set when the load gave the stored queue up (it did not answer in time). */
  private givenUp = false;

  get origin(): string {
    return this.stored;
  }

  get durable(): boolean {
    return this.memory === undefined;
  }

  private check(): void {
    if (this.closed) throw new StateSyncError("CLOSED", "the pending queue was closed");
  }

  private range(): IDBKeyRange {
    return IDBKeyRange.bound([this.key, this.owner, 0], [this.key, this.owner, Infinity]);
  }

  /**
   * Damaged records are deleted (their seq kept in the queue's row), handed back with `content`;
   * one whose delete fails is left in place (`leftInPlace`) and the others load all the same.
   */
  async load(): Promise<PendingLoad> {
    this.check();
    const records: PendingRecord[] = [];
    let damaged: DamagedPendingRecord[] = [];
    let high = this.memoryHigh;
    if (this.db && !this.givenUp) {
      let loaded;
      try {
        loaded = await answerWithin(
          this.loadStored(),
          `load the queue ${this.key} / ${this.owner}`,
        );
      } catch (e) {
        if (!isStateSyncError(e, "QUEUE_FAILED") || !e.details?.timedOut) throw e;
        // Held by another tab: in memory under a new origin (so no seq of the stored queue is
        // handed out again), and the stored records are left to the next opener of the slot.
        this.warn(e);
        this.givenUp = true;
        this.memory = new Map();
        this.stored = randomOrigin();
        this.unlock();
        return { records: [], nextSeq: 1 };
      }
      records.push(...loaded.records);
      damaged = loaded.damaged;
      high = Math.max(high, loaded.high);
    }
    for (const r of this.memory?.values() ?? []) {
      if (!records.some((x) => x.seq === r.seq)) records.push(r);
    }
    records.sort((a, b) => a.seq - b.seq);
    const nextSeq = high + 1;
    return damaged.length > 0 ? { records, nextSeq, damaged } : { records, nextSeq };
  }

  /**
   * The stored records, the damaged ones (deleted, their seqs kept in the queue's row so
   * `nextSeq` never goes back), and the highest seq ever used. Read in a read-only transaction,
   * which runs beside other tabs' reads of these stores (a write transaction waits for every
   * transaction over them started before it: behind another tab's load, held by its busy main
   * thread, a reloaded tab's queue of 2,000 records passed the 5 s wait and ran in memory, a
   * browser trial). The damaged records, if any, are deleted afterwards in a write transaction
   * (the queue's lock keeps other writers of its records out in between); those that cannot be
   * are left in place (`deleteDamaged`).
   */
  private async loadStored(): Promise<{
    records: PendingRecord[];
    damaged: DamagedPendingRecord[];
    high: number;
  }> {
    const records: PendingRecord[] = [];
    const damaged: DamagedPendingRecord[] = [];
    let high = 0;
    try {
      const [rows, queue] = await inTransaction(
        () => this.db!.transaction([RECORDS, QUEUES], "readonly"),
        (tx) =>
          Promise.all([
            tx.objectStore(RECORDS).getAll(this.range()) as Promise<RecordRow[]>,
            tx.objectStore(QUEUES).get([this.key, this.owner]) as Promise<QueueRow | undefined>,
          ]),
      );
      // Not a seq (edited storage: the open sets such a row back, `queueRow`): not counted.
      high = seqOr0(queue?.highSeq);
      for (const row of rows) {
        // A key that is no seq (above 2^52, 0, a fraction: edited storage) is damaged and not
        // counted: no seq would be left after it (as the Node store's file names).
        if (isPendingSeq(row.seq)) high = Math.max(high, row.seq);
        const read = readPendingRecord(row.record, row.seq);
        if ("record" in read) records.push(read.record);
        else damaged.push({ seq: row.seq, reason: read.reason, content: contentOf(row.record) });
      }
      if (damaged.length > 0) {
        return { records, damaged: await this.deleteDamaged(damaged, high), high };
      }
    } catch (e) {
      throw isStateSyncError(e) ? e : failed("load the pending records", e);
    }
    return { records, damaged, high };
  }

  /**
   * Deletes the damaged records in one transaction, keeping `high` in the row; when that fails
   * (quota, an aborted transaction, a connection closing), each in a transaction of its own. One
   * whose delete still fails stays where it is, reported `leftInPlace` (out of `records`, its seq
   * counted, handed back by every load until its delete succeeds): before, such a failure
   * rejected the whole load, and none of the queue's other records was loaded.
   */
  private async deleteDamaged(
    damaged: readonly DamagedPendingRecord[],
    high: number,
  ): Promise<DamagedPendingRecord[]> {
    const done = (seqs: number[]) => this.deleteRecords(seqs, high).then(ok, no);
    if (await done(damaged.map((d) => d.seq))) return [...damaged];
    return Promise.all(
      damaged.map(async (d) =>
        (await done([d.seq])) ? d : { seq: d.seq, reason: d.reason, leftInPlace: true as const },
      ),
    );
  }

  /** Deletes the records of `seqs` in one transaction, and keeps `high` in the row. */
  private async deleteRecords(seqs: readonly number[], high: number): Promise<void> {
    await inTransaction(
      () => this.db!.transaction([RECORDS, QUEUES], "readwrite"),
      async (tx) => {
        const records = tx.objectStore(RECORDS);
        const deletes = seqs.map((seq) => records.delete([this.key, this.owner, seq]));
        // Awaited together: a transaction aborted while the row was read (quota) rejected the
        // deletes with nobody holding them (an unhandled rejection in the page).
        const [queue] = (await Promise.all([
          tx.objectStore(QUEUES).get([this.key, this.owner]),
          ...deletes,
        ])) as [QueueRow | undefined, ...unknown[]];
        if (queue && high > queue.highSeq) {
          await tx.objectStore(QUEUES).put({ ...queue, highSeq: high });
        }
      },
    );
  }

  async put(record: PendingRecord): Promise<void> {
    this.check();
    const copy = structuredClone(checkPendingRecord(record));
    if (!this.memory) {
      try {
        await this.putStored({ key: this.key, owner: this.owner, seq: copy.seq, record: copy });
        return;
      } catch (e) {
        // Quota, or the database went away: memory from now on (warned once for a batch).
        if (!this.memory) {
          this.warn(e);
          this.memory = new Map();
        }
      }
    }
    this.memory.set(copy.seq, copy);
    this.memoryHigh = Math.max(this.memoryHigh, copy.seq);
  }

  /** Rows put since the last batch was written, and the settling of their transaction. */
  private batch:
    | { rows: RecordRow[]; done: Promise<void>; resolve(): void; reject(e: unknown): void }
    | undefined;

  /**
   * Writes `row` with the others put in the same task, in one transaction: one per record cost
   * 3.5 s for 1,000 edits made at once in one tab, about 15 s with two tabs busy, during which
   * a reload lost them (stop 26's trial). The transaction is created at the end of the task, or
   * before any delete (`flushPuts`), so writes reach IndexedDB in the order they were called.
   */
  private putStored(row: RecordRow): Promise<void> {
    if (!this.batch) {
      let resolve!: () => void;
      let reject!: (e: unknown) => void;
      const done = new Promise<void>((ok, fail) => ((resolve = ok), (reject = fail)));
      this.batch = { rows: [], done, resolve, reject };
      queueMicrotask(() => this.flushPuts());
    }
    this.batch.rows.push(row);
    return this.batch.done;
  }

  /** Starts the transaction of the rows put so far (synchronously: IndexedDB orders by it). */
  private flushPuts(): void {
    const batch = this.batch;
    if (!batch) return;
    this.batch = undefined;
    inTransaction(
      () => this.db!.transaction(RECORDS, "readwrite"),
      async (tx) => {
        await Promise.all(batch.rows.map((row) => tx.store.put(row)));
      },
    ).then(batch.resolve, batch.reject);
  }

  async delete(list: readonly number[]): Promise<void> {
    this.check();
    const seqs = checkPendingSeqs(list);
    for (const seq of seqs) this.memory?.delete(seq);
    await this.remove(seqs);
  }

  async clear(): Promise<void> {
    this.check();
    this.memory?.clear();
    await this.remove(undefined);
  }

  /**
   * The database is going away under the queue (another tab or the app deletes or upgrades it:
   * `versionchange`): its records in memory from now on, not durable, with a warning. The queue
   * goes on (its records already stored go with the database; the engine still holds them).
   */
  degrade(reason: unknown): void {
    if (this.closed || this.memory) return;
    this.warn(reason);
    this.memory = new Map();
    this.givenUp = true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onClose();
  }

  /** Deletes `seqs` (all when undefined), keeping `highSeq` above them, in one transaction. */
  private async remove(seqs: readonly number[] | undefined): Promise<void> {
    if (!this.db) return; // in memory from the start: removed there
    this.flushPuts(); // puts called before this delete are written before it
    try {
      await inTransaction(
        () => this.db!.transaction([RECORDS, QUEUES], "readwrite"),
        async (tx) => {
          const records = tx.objectStore(RECORDS);
          const queues = tx.objectStore(QUEUES);
          const row = (await queues.get([this.key, this.owner])) as QueueRow;
          let high = seqOr0(row.highSeq);
          if (seqs === undefined) {
            for (const k of (await records.getAllKeys(this.range())) as number[][]) {
              if (isPendingSeq(k[2])) high = Math.max(high, k[2]);
            }
            await records.delete(this.range());
          } else {
            // Every request at once (IndexedDB runs them in order): one after the other, a drain
            // of 2,000 records waited for 4,000 answers in turn, holding both stores meanwhile.
            const keys = seqs.map((seq) => [this.key, this.owner, seq] as const);
            const found = await Promise.all(keys.map((k) => records.getKey([...k])));
            const present = keys.filter((_, i) => found[i] !== undefined); // absent: ignored
            for (const k of present) high = Math.max(high, k[2]);
            await Promise.all(present.map((k) => records.delete([...k])));
          }
          if (high !== row.highSeq) await queues.put({ ...row, highSeq: high });
        },
      );
    } catch (e) {
      if (this.memory) return; // already degraded: the records in memory were removed
      throw failed("delete pending records", e);
    }
  }
}

const ok = () => true;
const no = () => false;

/** A damaged record's value as text, for the report (it is deleted). */
function contentOf(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    // a cycle, a BigInt: fall back to its String()
  }
  return (text ?? String(value)).slice(0, DAMAGED_CONTENT_CHARS);
}

function failed(what: string, cause: unknown): StateSyncError {
  return new StateSyncError("QUEUE_FAILED", `could not ${what} in IndexedDB: ${String(cause)}`, {
    cause,
  });
}

/**
 * `work`, or `QUEUE_FAILED` (`details.timedOut`) when it has not settled in `OPEN_WAIT_MS` of
 * this thread's free time (`afterFreeTime`: time the page's own long tasks held it is not
 * counted, as no answer could arrive then).
 */
export function answerWithin<T>(work: Promise<T>, what: string): Promise<T> {
  let cancel: (() => void) | undefined;
  const late = new Promise<never>((_, reject) => {
    cancel = afterFreeTime(OPEN_WAIT_MS, () => {
      const why = `IndexedDB did not answer within ${OPEN_WAIT_MS} ms to ${what} (another tab may hold the database)`;
      reject(new StateSyncError("QUEUE_FAILED", why, { details: { timedOut: true } }));
    });
  });
  work.catch(() => undefined);
  return Promise.race([work, late]).finally(() => cancel?.());
}

/** `value` if it is a seq (`isPendingSeq`), else 0. */
function seqOr0(value: unknown): number {
  return isPendingSeq(value) ? value : 0;
}

/** A queue origin: 16 random base-36 characters (originSchema: printable, at most 64). */
export function randomOrigin(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => (b % 36).toString(36)).join("");
}
