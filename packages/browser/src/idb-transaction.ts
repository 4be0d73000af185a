import { openDB, type DBSchema, type IDBPDatabase, type OpenDBCallbacks } from "idb";
import { afterFreeTime } from "./free-time-wait.js";

/** What {@link inTransaction} needs of an `idb` transaction. */
interface Transaction {
  readonly done: Promise<void>;
  abort(): void;
}

/**
 * Runs `work` in the transaction `open()` starts and resolves with its result once the
 * transaction committed. Every IndexedDB transaction of this package goes through here: `idb`
 * makes each transaction's `done` promise eagerly, and it rejects when the transaction aborts
 * (a failed request, a connection force-closed by "Clear site data", quota). A call that left at
 * its first failed request without awaiting `done` let that rejection reach the page's
 * `unhandledrejection` (a trial: "Connection is closing because of: Force close delete origin").
 * Here `done` is handled on every path; a `work` that throws aborts the transaction (nothing of
 * it is committed) and its error is what the call rejects with, for the caller to turn into its
 * typed error or warning. `open()` throwing (a connection that is closing) rejects the same way.
 */
export async function inTransaction<Tx extends Transaction, T>(
  open: () => Tx,
  work: (tx: Tx) => Promise<T>,
): Promise<T> {
  const tx = open();
  tx.done.catch(() => undefined);
  let result: T;
  try {
    result = await work(tx);
  } catch (e) {
    try {
      tx.abort();
    } catch {
      // already aborted or finished
    }
    throw e;
  }
  await tx.done;
  return result;
}

/**
 * How long any open of an IndexedDB database in this package waits, ms. Chromium can leave an
 * open unanswered for 25-120 s (after the origin's site data was cleared, or queued behind a
 * `deleteDatabase` or an upgrade that an old connection never gives way to, which fires no
 * `blocked` event for the queued open); past this limit the open rejects with
 * {@link DatabaseOpenTimeoutError} and the store degrades as it does for any failed open.
 */
export const IDB_OPEN_WAIT_MS = 5_000;

/** The longest delay `setTimeout` takes (2^31 - 1 ms): a longer one fires at once. */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** An open of an IndexedDB database that did not answer within its limit. */
export class DatabaseOpenTimeoutError extends Error {
  override readonly name = "DatabaseOpenTimeoutError";
  constructor(
    readonly databaseName: string,
    readonly waitMs: number,
  ) {
    super(
      `IndexedDB "${databaseName}" did not open within ${waitMs} ms (queued behind a deletion ` +
        "or an upgrade that another connection does not give way to, or site data being cleared)",
    );
  }
}

/**
 * `idb`'s `openDB`, bounded in time and with the upgrade transaction's `done` handled. `openDB`
 * wraps that transaction for the `upgrade` callback, which makes its `done` eagerly; when the
 * upgrade aborts (a connection force-closed by "Clear site data" while the database is created,
 * a failed `createObjectStore`) it rejected with nobody holding it, and reached the page's
 * `unhandledrejection` (a CI run: "Connection is closing because of: Force close delete origin").
 * Resolves to the open database (`version` undefined: its current version, created at 1 if it
 * does not exist, as `openDB`); rejects when the open fails, `AbortError` when the upgrade
 * aborted, {@link DatabaseOpenTimeoutError} when it has not answered within `waitMs` (an open
 * that stalls: see {@link IDB_OPEN_WAIT_MS}), for the caller to handle. A connection that opens
 * after the limit is closed as soon as it opens (never handed out, so it cannot leak or block
 * another tab's upgrade); the caller's next open opens again. `callbacks.upgrade` must be
 * synchronous (IndexedDB ends the upgrade transaction once its callback returns). Every database
 * of this package is opened here (eslint forbids `openDB` elsewhere in src).
 */
export function openDatabase<DB extends DBSchema | unknown = unknown>(
  name: string,
  version: number | undefined,
  waitMs: number,
  callbacks: OpenDBCallbacks<DB> = {},
): Promise<IDBPDatabase<DB>> {
  const { upgrade } = callbacks;
  const opened = openDB<DB>(name, version, {
    ...callbacks,
    upgrade(db, oldVersion, newVersion, transaction, event) {
      transaction.done.catch(() => undefined);
      upgrade?.(db, oldVersion, newVersion, transaction, event);
    },
  });
  let cancel: (() => void) | undefined;
  const late = new Promise<never>((_, reject) => {
    // Clamped: a delay above setTimeout's bound would fire at once and fail every open. Counted
    // in this thread's free time (`afterFreeTime`): a page busy meanwhile is not the open's delay.
    const delay = Math.min(Math.max(waitMs, 0), MAX_TIMEOUT_MS);
    cancel = afterFreeTime(delay, () => reject(new DatabaseOpenTimeoutError(name, delay)));
  });
  return Promise.race([opened, late]).then(
    (db) => {
      cancel?.();
      return db;
    },
    (err: unknown) => {
      cancel?.();
      void opened.then((db) => db.close()).catch(() => undefined); // a late open: closed
      throw err;
    },
  );
}
