import {
  isPendingSeq,
  pendingOwnerSchema,
  StateSyncError,
  type PendingQueue,
  type PendingStore,
} from "@statesync/core";
import type { IDBPDatabase } from "idb";
import { checkedOptions, pendingStoreOptionsSchema } from "./constructor-options.js";
import { DatabaseOpenTimeoutError, inTransaction, openDatabase } from "./idb-transaction.js";
import {
  answerWithin,
  IdbQueue,
  OPEN_WAIT_MS,
  QUEUES,
  randomOrigin,
  RECORDS,
  type QueueRow,
} from "./indexeddb-pending-queue.js";
import type { LockManagerLike } from "./tabs/leadership.js";

/** Options of {@link IndexedDbPendingStore}. */
export interface IndexedDbPendingStoreOptions {
  /** Database name. Default `"statesync-pending"` (apart from the snapshots' database). */
  databaseName?: string;
  /**
   * Called once when IndexedDB cannot be used (missing, private mode, quota, an open that did not
   * answer within `OPEN_WAIT_MS`, 5 s): the queues then run in memory, `durable: false` (so
   * `update(...).queued` says an update is not stored).
   */
  onWarning?: (error: unknown) => void;
}

type Locks = LockManagerLike & {
  request(
    name: string,
    options: { ifAvailable: true },
    callback: (lock: unknown) => Promise<void>,
  ): Promise<unknown>;
};

/**
 * The offline queue's store in the browser (the `PendingStore` port, docs/offline.md): one
 * IndexedDB record per pending update (a put writes that record alone; a delete removes those
 * named), so thousands pending cost writes proportional to the changes. The lock of a
 * `(key, owner)` is a Web Lock (`statesync-pending:<db>:<key>:<owner>`, taken if available): it
 * holds against every tab of the origin, and the browser releases it when the tab that held it
 * dies. Without Web Locks a queue cannot be locked against other tabs (two tabs would hand out
 * the same seqs), so it runs in memory, as below. Records are checked with
 * `pendingRecordSchema` when loaded; a damaged one is deleted and handed back in `damaged`
 * (reported as `CORRUPT_PENDING`), or, when its delete fails (quota, an aborted transaction),
 * left in place (`leftInPlace: true`, handed back again by every load) while the others load.
 *
 * Where IndexedDB cannot be opened, or a write fails (quota), the store warns once
 * (`onWarning`) and keeps the queue in memory: `durable` turns false. Each wait on IndexedDB
 * while opening is bounded by `OPEN_WAIT_MS` (5 s) on its own: the database's open (which
 * Chromium can leave unanswered for 25-120 s, e.g. queued behind a `deleteDatabase` that an old
 * connection does not give way to), the queue's row, and its first load (so up to 15 s in all),
 * each in this thread's free time (`afterFreeTime`: a page's own long task is not counted). An open given up on warns (`QUEUE_FAILED`,
 * `details.timedOut`) and that queue runs in memory; its connection, if it opens later, is
 * closed at once (not kept), and the next `open` opens the database again. Passes
 * `runPendingStoreConformance` in Chromium (test/indexeddb-pending-store.browser.test.ts).
 *
 * Test hook: `crashed()` gives a store over the same database with this one's locks released,
 * as a tab that was killed leaves them.
 */
export class IndexedDbPendingStore implements PendingStore {
  readonly databaseName: string;
  private db: Promise<IDBPDatabase> | undefined;
  private readonly held = new Map<string, () => void>();
  private readonly queues = new Set<IdbQueue>();
  private warned = false;

  /** Throws `VALIDATION` for options that are no `IndexedDbPendingStoreOptions` (strict). */
  constructor(private readonly options: IndexedDbPendingStoreOptions = {}) {
    checkedOptions("IndexedDbPendingStore", pendingStoreOptionsSchema, options);
    this.databaseName = options.databaseName ?? "statesync-pending";
  }

  async open(key: string, owner: string): Promise<PendingQueue> {
    if (typeof key !== "string" || key.length === 0) {
      throw new StateSyncError("VALIDATION", "a pending queue key is a non-empty string");
    }
    if (!pendingOwnerSchema.safeParse(owner).success) {
      throw new StateSyncError("VALIDATION", `invalid queue owner ${JSON.stringify(owner)}`);
    }
    if (!webLocks()) {
      // Two tabs would open one queue and hand out the same seqs: an update could be lost.
      return this.inMemory(key, owner, new Error("no Web Locks: a queue cannot be locked"));
    }
    let db: IDBPDatabase;
    try {
      db = await this.database();
    } catch (e) {
      return this.inMemory(key, owner, e instanceof DatabaseOpenTimeoutError ? timedOut(e) : e);
    }
    const name = `statesync-pending:${this.databaseName}:${key}:${owner}`;
    const release = await this.lock(name);
    if (!release) {
      throw new StateSyncError("QUEUE_LOCKED", `the queue of ${key} for ${owner} is open`, {
        details: { key, owner },
      });
    }
    try {
      const { row, damage } = await answerWithin(
        queueRow(db, key, owner),
        `open the queue ${key} / ${owner}`,
      );
      if (damage) this.warnDamage(damage);
      const unlock = () => {
        release();
        this.held.delete(name);
      };
      const queue = new IdbQueue(
        db,
        key,
        owner,
        row.origin,
        (e) => this.warn(e),
        unlock,
        () => {
          unlock();
          this.queues.delete(queue);
        },
      );
      this.queues.add(queue);
      return queue;
    } catch (e) {
      release();
      this.held.delete(name);
      return this.inMemory(key, owner, e); // quota, a database that went away
    }
  }

  /**
   * See `PendingStore.owners`: the owners of `key` with a queue row or records in the database,
   * read in one read-only transaction (no row is created, no lock taken: the drain of dead tabs'
   * slots looks with it, where opening every slot made a row for each). Rejects `QUEUE_FAILED`
   * when the database cannot be opened or read, each within `OPEN_WAIT_MS`.
   */
  async owners(key: string): Promise<string[]> {
    if (typeof key !== "string" || key.length === 0) {
      throw new StateSyncError("VALIDATION", "a pending queue key is a non-empty string");
    }
    try {
      const db = await this.database();
      return await answerWithin(queueOwners(db, key), `list the queues of ${key}`);
    } catch (e) {
      if (e instanceof StateSyncError) throw e;
      const error = e instanceof DatabaseOpenTimeoutError ? timedOut(e) : undefined;
      throw (
        error ??
        new StateSyncError("QUEUE_FAILED", `cannot list the queues of ${key}`, { cause: e })
      );
    }
  }

  /**
   * The queue in memory (`durable: false`), after IndexedDB failed with `error`: locked within
   * this store only, its records kept while it is open (a new origin at each open, so a seq is
   * never reused).
   */
  private async inMemory(key: string, owner: string, error: unknown): Promise<PendingQueue> {
    this.warn(error);
    const name = `memory:${key}:${owner}`;
    if (this.held.has(name)) {
      throw new StateSyncError("QUEUE_LOCKED", `the queue of ${key} for ${owner} is open`, {
        details: { key, owner },
      });
    }
    this.held.set(name, () => undefined);
    const queue: IdbQueue = new IdbQueue(
      undefined,
      key,
      owner,
      randomOrigin(),
      () => undefined,
      () => undefined,
      () => {
        this.held.delete(name);
        this.queues.delete(queue);
      },
    );
    this.queues.add(queue);
    return queue;
  }

  /**
   * Closes the database connection (open queues are closed too). An open still under way is not
   * waited for: its connection is closed once it opens.
   */
  async close(): Promise<void> {
    for (const q of [...this.queues]) await q.close();
    const db = this.db;
    this.db = undefined;
    void db?.then((d) => d.close()).catch(() => undefined);
  }

  private giveWay(why = "is being deleted or upgraded"): void {
    const db = this.db;
    this.db = undefined;
    void db?.then((d) => d.close()).catch(() => undefined);
    const reason = new Error(`IndexedDB database ${this.databaseName} ${why}`);
    for (const q of this.queues) q.degrade(reason);
  }

  /** Test hook: this store's locks released and its queues fenced (a killed tab); a new store. */
  crashed(): IndexedDbPendingStore {
    for (const q of [...this.queues]) void q.close();
    return new IndexedDbPendingStore(this.options);
  }

  private database(): Promise<IDBPDatabase> {
    if (typeof indexedDB === "undefined") {
      return Promise.reject(new Error("IndexedDB is not available here"));
    }
    if (this.db) return this.db;
    const opening = openDatabase(this.databaseName, 1, OPEN_WAIT_MS, {
      upgrade(db) {
        db.createObjectStore(RECORDS, { keyPath: ["key", "owner", "seq"] });
        db.createObjectStore(QUEUES, { keyPath: ["key", "owner"] });
      },
      // Deleted or upgraded elsewhere (DevTools "Clear site data", an app's logout): the
      // connection gives way at once and the open queues go on in memory (closing them for good
      // failed every later update with CLOSED until a reload, online too: a trial). The next
      // open opens the database again.
      blocking: () => this.giveWay(),
      // Closed by the browser (Clear site data force-closes it, aborting what is in flight): the
      // same, rather than a QUEUE_FAILED for every later delete.
      terminated: () => this.giveWay("was closed by the browser (site data cleared?)"),
    });
    this.db = opening;
    opening.catch(() => {
      if (this.db === opening) this.db = undefined; // not a newer open's
    });
    return opening;
  }

  /** Takes the lock `name` if it is free: resolves to its release, or undefined. */
  private async lock(name: string): Promise<(() => void) | undefined> {
    if (this.held.has(name)) return undefined;
    const locks = webLocks()!;
    return new Promise((resolve) => {
      void locks
        .request(name, { ifAvailable: true }, (lock) => {
          if (lock === null) {
            resolve(undefined);
            return Promise.resolve();
          }
          return new Promise<void>((done) => {
            const release = () => done();
            this.held.set(name, release);
            resolve(release);
          });
        })
        .catch(() => resolve(undefined));
    });
  }

  /** A queue's damaged row, repaired: told each time (the queue stays durable). */
  private warnDamage(e: StateSyncError): void {
    try {
      this.options.onWarning?.(e);
    } catch {
      // a warning listener must not fail the open
    }
  }

  private warn(e: unknown): void {
    if (this.warned) return;
    this.warned = true;
    try {
      this.options.onWarning?.(e);
    } catch {
      // a warning listener must not turn a fallback to memory into a failed write
    }
  }
}

/** `navigator.locks`, where the browser has Web Locks. */
function webLocks(): Locks | undefined {
  return (globalThis as { navigator?: { locks?: Locks } }).navigator?.locks;
}

/** An open given up on, as the queue's other waits report it: `QUEUE_FAILED`, `timedOut`. */
function timedOut(e: DatabaseOpenTimeoutError): StateSyncError {
  return new StateSyncError("QUEUE_FAILED", e.message, { cause: e, details: { timedOut: true } });
}

/**
 * The owners of `key` with a row in `queues` or records in `records` (a row is written at a
 * queue's first open; records are looked at too, one key cursor step per owner).
 */
async function queueOwners(db: IDBPDatabase, key: string): Promise<string[]> {
  const range = IDBKeyRange.bound([key], [key, []]);
  return inTransaction(
    () => db.transaction([QUEUES, RECORDS], "readonly"),
    async (tx) => {
      const owners = new Set<string>();
      for (const k of await tx.objectStore(QUEUES).getAllKeys(range)) {
        owners.add(String((k as unknown[])[1]));
      }
      let cursor = await tx.objectStore(RECORDS).openKeyCursor(range);
      while (cursor) {
        const owner = String((cursor.key as unknown[])[1]);
        owners.add(owner);
        cursor = await cursor.continue([key, owner, []]); // past this owner's records
      }
      return [...owners];
    },
  );
}

/**
 * The row of a queue, created (with a new origin) when there is none. A `highSeq` that is neither
 * 0 nor a seq (`isPendingSeq`: versions before the 2^52 bound stored up to 2^53 - 1) is damage:
 * every later `put` would fail `VALIDATION` (no seq left above it). It is set back to the highest
 * seq a record is stored under (a record filed above 2^52 is damaged, `load` hands it back), and
 * `damage` says so. The origin is kept: it only names the records stored without one, which
 * were sent under it (new updates go under their session's origin, docs/offline.md "Identity"),
 * so a new one would make those committed again.
 */
async function queueRow(
  db: IDBPDatabase,
  key: string,
  owner: string,
): Promise<{ row: QueueRow; damage?: StateSyncError }> {
  // Read first, in a read-only transaction: it runs beside other tabs' reads of these stores,
  // where a write transaction waits for every one started before it (a reloaded tab's open passed
  // the 5 s wait behind another tab's load, held by that tab's busy main thread: a browser
  // trial). Written only when there is no row or it is damaged (the queue's lock is held, so no
  // other open writes it in between).
  const read = await inTransaction(
    () => db.transaction(QUEUES, "readonly"),
    (tx) => tx.store.get([key, owner]) as Promise<QueueRow | undefined>,
  );
  if (read && (read.highSeq === 0 || isPendingSeq(read.highSeq))) return { row: read };
  return writeQueueRow(db, key, owner);
}

/** {@link queueRow}'s write: the row created, or its `highSeq` repaired. */
async function writeQueueRow(
  db: IDBPDatabase,
  key: string,
  owner: string,
): Promise<{ row: QueueRow; damage?: StateSyncError }> {
  return inTransaction(
    () => db.transaction([QUEUES, RECORDS], "readwrite"),
    async (tx) => {
      const queues = tx.objectStore(QUEUES);
      const row = (await queues.get([key, owner])) as QueueRow | undefined;
      if (!row) {
        const created = { key, owner, origin: randomOrigin(), highSeq: 0 };
        await queues.put(created);
        return { row: created };
      }
      if (row.highSeq === 0 || isPendingSeq(row.highSeq)) return { row };
      const range = IDBKeyRange.bound([key, owner, 0], [key, owner, Infinity]);
      let highSeq = 0;
      for (const k of (await tx.objectStore(RECORDS).getAllKeys(range)) as number[][]) {
        if (isPendingSeq(k[2])) highSeq = Math.max(highSeq, k[2]);
      }
      const repaired = { ...row, highSeq };
      await queues.put(repaired);
      const damage = new StateSyncError(
        "CORRUPT_PENDING",
        `the queue ${key} / ${owner} stored ${String(row.highSeq)} as its highest seq, not a ` +
          `seq (1 to 2^52): set back to ${highSeq}, the highest stored record's`,
        { details: { key, owner, highSeq: row.highSeq, repairedTo: highSeq } },
      );
      return { row: repaired, damage };
    },
  );
}
