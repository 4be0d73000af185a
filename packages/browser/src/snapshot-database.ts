import type { IDBPDatabase } from "idb";
import { IDB_OPEN_WAIT_MS, openDatabase } from "./idb-transaction.js";
import { afterFreeTime } from "./free-time-wait.js";

/** Name of the object store that holds snapshots (out-of-line string keys). */
export const SNAPSHOT_STORE = "snapshots";

/** Thrown when another connection blocks the upgrade longer than allowed. */
export class DatabaseBlockedError extends Error {
  override readonly name = "DatabaseBlockedError";
}

const MAX_UPGRADE_RACES = 5;

/**
 * One lazily opened IndexedDB connection that gets out of the way of others (idb callbacks):
 * - `blocking` (another tab, or `deleteDatabase`, wants a newer version): the connection closes
 *   and the next {@link get} reopens, so this page never blocks an upgrade or a deletion;
 * - `terminated` (the browser closed it, e.g. site data cleared): the next {@link get} reopens;
 * - `blocked` (a connection elsewhere that ignores `versionchange` holds an older version while
 *   the snapshot store has to be created): {@link get} rejects with {@link DatabaseBlockedError}
 *   after `blockedTimeoutMs`;
 * - an open that does not answer at all (Chromium can leave one waiting 25-120 s, e.g. queued
 *   behind a `deleteDatabase` that an old connection does not give way to, with no `blocked`
 *   event): {@link get} rejects with `DatabaseOpenTimeoutError` after `IDB_OPEN_WAIT_MS` (5 s),
 *   or `blockedTimeoutMs` if that is longer. A connection that opens after either limit is
 *   closed at once (not kept).
 *
 * The database is opened at its current version; only when the snapshot store is missing (a new
 * database, or one another script created) is it reopened at the next version to create the
 * store, so other code may use the same database and bump its version.
 */
export class SnapshotDatabase {
  private opening: Promise<IDBPDatabase> | undefined;
  private closed = false;

  constructor(
    readonly name: string,
    private readonly blockedTimeoutMs: number,
  ) {}

  /** The open connection; opens (or reopens) it first. Rejects with what `indexedDB.open` gave. */
  get(): Promise<IDBPDatabase> {
    if (this.closed) return Promise.reject(new Error("the snapshot database was closed"));
    if (!this.opening) {
      const opening = this.open();
      this.opening = opening;
      opening.catch(() => {
        if (this.opening === opening) this.opening = undefined;
      });
    }
    return this.opening;
  }

  /** Forgets the connection (after an `InvalidStateError`): the next {@link get} reopens. */
  reset(): void {
    const opening = this.opening;
    this.opening = undefined;
    void opening?.then((db) => db.close()).catch(() => undefined);
  }

  /** Closes the connection for good. */
  close(): void {
    this.closed = true;
    this.reset();
  }

  private async open(): Promise<IDBPDatabase> {
    if (typeof indexedDB === "undefined") throw new Error("IndexedDB is not available here");
    for (let race = 0; ; race++) {
      const current = await this.openAt(undefined);
      if (current.objectStoreNames.contains(SNAPSHOT_STORE)) return current;
      const next = current.version + 1;
      current.close();
      try {
        return await this.openAt(next);
      } catch (err) {
        // Another tab upgraded first: start over from its version.
        if ((err as DOMException).name !== "VersionError" || race >= MAX_UPGRADE_RACES) throw err;
      }
    }
  }

  private openAt(version: number | undefined): Promise<IDBPDatabase> {
    let cancelWait: (() => void) | undefined;
    let db: IDBPDatabase | undefined;
    let onBlocked: () => void = () => undefined;
    const blocked = new Promise<never>((_, reject) => {
      onBlocked = () => {
        // Counted in this tab's free time: an unblocking answered during its own long task is
        // not a block (the same as the open's own wait, `openDatabase`).
        cancelWait ??= afterFreeTime(this.blockedTimeoutMs, () => {
          const ms = this.blockedTimeoutMs;
          reject(new DatabaseBlockedError(`IndexedDB "${this.name}" stayed blocked for ${ms} ms`));
        });
      };
    });
    const forget = () => {
      db?.close();
      // Drop it only if it is still the connection in use (not an older one closing late).
      const opening = this.opening;
      void opening
        ?.then((current) => {
          if (current === db && this.opening === opening) this.opening = undefined;
        })
        .catch(() => undefined); // a failed open: reported by the call that awaited it
    };
    const waitMs = Math.max(IDB_OPEN_WAIT_MS, this.blockedTimeoutMs);
    const opened = openDatabase(this.name, version, waitMs, {
      upgrade(upgrading) {
        if (!upgrading.objectStoreNames.contains(SNAPSHOT_STORE)) {
          upgrading.createObjectStore(SNAPSHOT_STORE);
        }
      },
      blocked: onBlocked,
      blocking: forget,
      terminated: forget,
    }).then((value) => (db = value));
    return Promise.race([opened, blocked]).then(
      (result) => {
        cancelWait?.();
        return result;
      },
      (err: unknown) => {
        cancelWait?.();
        // A connection that opens after we gave up on it must not stay open and block others.
        void opened.then((late) => late.close()).catch(() => undefined);
        throw err;
      },
    );
  }
}
