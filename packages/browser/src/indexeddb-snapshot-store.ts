import {
  checkSnapshotKey,
  checkSnapshotRecordInSlices,
  isStateSyncError,
  MemorySnapshotStore,
  shouldReplaceSnapshot,
  StateSyncError,
  type SnapshotRecord,
  type SnapshotStore,
} from "@statesync/core";
import type { IDBPDatabase } from "idb";
import { checkedOptions, snapshotStoreOptionsSchema } from "./constructor-options.js";
import { DatabaseOpenTimeoutError, inTransaction } from "./idb-transaction.js";
import { decodeSnapshot, encodeSnapshot, storedHeader } from "./snapshot-codec.js";
import { DatabaseBlockedError, SNAPSHOT_STORE, SnapshotDatabase } from "./snapshot-database.js";

/** Why an {@link IndexedDbSnapshotStore} fell back to memory. */
export type SnapshotFallbackReason =
  /** No IndexedDB, or the browser refuses it (private browsing, blocked site data). */
  | "unavailable"
  /** The origin's storage quota is used up. */
  | "quota"
  /** Another connection kept the database blocked longer than `blockedTimeoutMs`. */
  | "blocked"
  /**
   * Any other IndexedDB failure: for good when the database could never be opened; otherwise
   * for one call that kept failing through every reopen, or whose open of the database did not
   * answer within 5 s (or `blockedTimeoutMs`, if longer: one queued behind a deletion or an
   * upgrade that a connection elsewhere does not give way to, or a slow cold open). The store
   * stays on IndexedDB then: the next call opens it again.
   */
  | "failed";

/** Why a call of an {@link IndexedDbSnapshotStore} met a failure (see {@link SnapshotStoreWarning}). */
export type SnapshotWarningReason =
  | SnapshotFallbackReason
  /**
   * Not the snapshot store's: the default offline queue keeps updates in memory only from now on
   * (a `PendingQueueWarning`, which `openSynchronizer`'s `onWarning` receives as well).
   */
  | "queue-in-memory"
  /**
   * Not the snapshot store's: the default offline queue found its stored row damaged (a highest
   * seq above 2^52, written by an earlier version) and repaired it; it stays in IndexedDB.
   */
  | "queue-damaged"
  /**
   * The connection was closed or failed under a call (site data cleared in DevTools, a
   * backgrounded Safari tab, a transaction aborted): the store reopens with a backoff and goes on.
   */
  | "interrupted";

/**
 * What `onWarning` receives. Once per call that meets a failure (`"interrupted"`, the store
 * reopens and retries), once more when that call exhausts its attempts (`"failed"`, with
 * `fallback: false`: that one call is served in memory), and once when the store falls back to
 * memory for good (`fallback: true`).
 */
export class SnapshotStoreWarning extends Error {
  override readonly name: string = "SnapshotStoreWarning";
  constructor(
    message: string,
    /** What went wrong. */
    readonly reason: SnapshotWarningReason,
    options: { cause?: unknown; fallback?: boolean } = {},
  ) {
    super(message, options);
    this.fallback = options.fallback ?? false;
  }
  /** True when the store keeps snapshots in memory only for the rest of its life. */
  readonly fallback: boolean;
}

/** Options of {@link IndexedDbSnapshotStore}. */
export interface IndexedDbSnapshotStoreOptions {
  /** IndexedDB database name. Default `"statesync"`. */
  databaseName?: string;
  /**
   * Told of each failure: once per call that met one, and once when the store falls back to
   * memory for good (see {@link SnapshotStoreWarning}). Default `console.warn`.
   */
  onWarning?: (warning: SnapshotStoreWarning) => void;
  /**
   * How long to wait, in ms, for a database upgrade that a connection elsewhere blocks (one that
   * ignores `versionchange`) before falling back to memory. Default 3000, at most 2^31 - 1
   * (`setTimeout`'s bound). An open that does not answer at all is given up after 5 s, or after
   * this if it is longer: that call is served in memory, and the next one opens again.
   */
  blockedTimeoutMs?: number;
  /**
   * How a call retries after the connection failed under it: `attempts` in all (default 8),
   * waiting a delay that starts at `baseMs` (default 50) and doubles up to `capMs` (default
   * 2000), each drawn in its upper half ("equal jitter"). With the defaults a call gives up after
   * 2.6 to 5.2 s.
   */
  reopen?: { attempts?: number; baseMs?: number; capMs?: number };
}

/** The delay before retry `attempt` (1-based): half fixed, half random ("equal jitter"). */
function reopenDelay(attempt: number, baseMs: number, capMs: number): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt - 1, 30));
  return ceiling / 2 + (Math.random() * ceiling) / 2;
}

/**
 * Saves commit without waiting for the disk to flush (IndexedDB's `relaxed` durability): a crash
 * of the machine, not of the page, may lose the newest snapshot but never leaves a torn one, and
 * the replica then fetches a little more of the log. It makes a save much shorter, so the stored
 * snapshot trails the applied state by fewer batches.
 */
const RELAXED = { durability: "relaxed" } as const;

/** Whether a stored value decodes (a damaged one may be replaced by an older revision). */
const isIntact = (key: string, value: unknown): Promise<boolean> =>
  decodeSnapshot(key, value).then(
    () => true,
    () => false,
  );

const describeError = (err: unknown): string =>
  err instanceof Error ? `${err.name}: ${err.message}` : String(err);

function fallbackReason(err: unknown): SnapshotFallbackReason {
  if (err instanceof DatabaseBlockedError) return "blocked";
  const name = (err as { name?: unknown } | null)?.name;
  if (name === "QuotaExceededError") return "quota";
  if (name === "SecurityError" || typeof indexedDB === "undefined") return "unavailable";
  return "failed";
}

/**
 * A {@link SnapshotStore} in IndexedDB (with `idb`): one database (`databaseName`), one object
 * store `snapshots`, one value per key holding the record's JSON text and its SHA-256 (see
 * `StoredSnapshot`). Every tab of an origin shares it.
 *
 * - `save` encodes the record and its checksum in slices that yield to the event loop (no long
 *   main-thread task for a multi-megabyte state), then reads and writes in ONE readwrite
 *   transaction and writes only when `shouldReplaceSnapshot` allows (never over a newer revision
 *   of the same log, judged by the stored value's zod-checked header); IndexedDB runs readwrite
 *   transactions on one store one at a time, across tabs too, so concurrent saves end with the
 *   highest revision.
 * - `load` validates the value (shape with zod, checksum, `snapshotRecordSchema`) and throws
 *   `StateSyncError("CORRUPT_SNAPSHOT")` for a damaged one.
 * - A key that is no non-empty string, or a record `checkSnapshotRecordInSlices` refuses, is
 *   `VALIDATION` before IndexedDB is touched: no warning, no retry, nothing written.
 * - The connection closes itself when another tab upgrades or deletes the database
 *   (`versionchange`) and reopens on the next call (see `SnapshotDatabase`).
 * - A connection that fails or is closed under a call once the database has been open (the
 *   browser's `close` event, a `versionchange`, an aborted transaction) is reopened with a
 *   jittered backoff (`reopen`): the call reports one `"interrupted"` warning and retries; if
 *   every attempt fails, that call alone is served in memory (one `"failed"` warning) and the
 *   next call starts again on IndexedDB. Persistence is never switched off by such failures.
 * - An open that does not answer within 5 s (or `blockedTimeoutMs` if longer: Chromium can leave
 *   one queued 25-120 s behind a deletion an old connection does not give way to, and a cold
 *   open on a loaded device can be slow) fails that call alone: it is served in memory, and the
 *   next call opens the database again. One `"failed"` warning (`fallback: false`) per stall,
 *   not one per call: the next comes only after an open succeeded. A connection that opens after
 *   the limit is closed at once (`openDatabase`), so none is left open behind the store.
 * - When IndexedDB cannot be used at all (no IndexedDB, private browsing, quota exceeded, a
 *   database blocked longer than `blockedTimeoutMs`, a database that never opened) the store
 *   falls back to memory for the rest of its life: one {@link SnapshotStoreWarning} with
 *   `fallback: true` goes to `onWarning`, the save that failed is kept in memory, and no call
 *   rejects because of it. Snapshots then do not survive a reload; the replica catches up from
 *   the server instead.
 */
export class IndexedDbSnapshotStore implements SnapshotStore {
  private readonly database: SnapshotDatabase;
  private readonly onWarning: (warning: SnapshotStoreWarning) => void;
  private readonly reopen: { attempts: number; baseMs: number; capMs: number };
  /** Set when the store falls back to memory for good. */
  private memory: MemorySnapshotStore | undefined;
  /** What calls that exhausted their attempts kept (the store still uses IndexedDB). */
  private readonly spare = new MemorySnapshotStore();
  private reason: SnapshotFallbackReason | undefined;
  private opened = false;
  private closed = false;
  /** Set once an open timed out (warned), until one succeeds. */
  private stalled = false;

  /** Throws `VALIDATION` for options that are no `IndexedDbSnapshotStoreOptions` (strict). */
  constructor(options: IndexedDbSnapshotStoreOptions = {}) {
    checkedOptions("IndexedDbSnapshotStore", snapshotStoreOptionsSchema, options);
    const name = options.databaseName ?? "statesync";
    const blockedTimeoutMs = options.blockedTimeoutMs ?? 3_000;
    const reopen = {
      attempts: options.reopen?.attempts ?? 8,
      baseMs: options.reopen?.baseMs ?? 50,
      capMs: options.reopen?.capMs ?? 2_000,
    };
    this.reopen = reopen;
    this.database = new SnapshotDatabase(name, blockedTimeoutMs);
    this.onWarning = options.onWarning ?? ((warning) => console.warn(warning));
  }

  /** The IndexedDB database name. */
  get databaseName(): string {
    return this.database.name;
  }

  /** Why the store keeps snapshots in memory only, or undefined while it uses IndexedDB. */
  get fallbackReason(): SnapshotFallbackReason | undefined {
    return this.reason;
  }

  async load(key: string): Promise<SnapshotRecord | undefined> {
    // First, before IndexedDB sees it: it refuses some (null, an object) as a failure the store
    // would retry and fall back on, and takes others (a number, an array) as keys of their own.
    checkSnapshotKey(key);
    return this.run(
      async (db) => {
        const value: unknown = await inTransaction(
          () => db.transaction(SNAPSHOT_STORE, "readonly"),
          (tx) => tx.store.get(key),
        );
        return value === undefined ? undefined : await decodeSnapshot(key, value);
      },
      (memory) => memory.load(key),
    );
  }

  async save(key: string, record: SnapshotRecord): Promise<void> {
    checkSnapshotKey(key);
    if (this.closed) throw new StateSyncError("CLOSED", "the snapshot store is closed");
    const checked = await checkSnapshotRecordInSlices(record);
    const value = await encodeSnapshot(checked);
    return this.run(
      async (db) => {
        // Only IndexedDB requests are awaited inside a transaction, so it stays active. The
        // stored value's header decides; its body is checked only when the header claims a
        // newer revision (then a damaged value is replaced, but a good one from another tab
        // is kept).
        const { header, replace, current } = await inTransaction(
          () => db.transaction(SNAPSHOT_STORE, "readwrite", RELAXED),
          async (tx) => {
            const current: unknown = await tx.store.get(key);
            const header = storedHeader(current);
            const replace = shouldReplaceSnapshot(header, checked);
            if (replace) await tx.store.put(value, key);
            return { header, replace, current };
          },
        );
        if (replace || !header || (await isIntact(key, current))) return;
        await inTransaction(
          () => db.transaction(SNAPSHOT_STORE, "readwrite", RELAXED),
          async (tx) => {
            if (storedHeader(await tx.store.get(key))?.sha256 === header.sha256) {
              await tx.store.put(value, key);
            }
          },
        );
      },
      (memory) => memory.save(key, checked),
    );
  }

  async delete(key: string): Promise<void> {
    checkSnapshotKey(key);
    return this.run(
      (db) =>
        inTransaction(
          () => db.transaction(SNAPSHOT_STORE, "readwrite"),
          (tx) => tx.store.delete(key),
        ),
      (memory) => memory.delete(key),
    );
  }

  /** Closes the connection; later calls reject with `CLOSED`. */
  async close(): Promise<void> {
    this.closed = true;
    this.database.close();
  }

  /**
   * Runs `onDatabase` on the connection. On a failure other than a corrupt snapshot: before the
   * database ever opened, reopens once at once and then falls back to memory for good; after it,
   * reports one `"interrupted"` warning and reopens with the backoff, serving the call from
   * {@link spare} (with a `"failed"` warning) only when every attempt failed.
   */
  private async run<T>(
    onDatabase: (db: IDBPDatabase) => Promise<T>,
    inMemory: (memory: MemorySnapshotStore) => Promise<T>,
  ): Promise<T> {
    let interrupted = false;
    for (let attempt = 0; !this.memory; attempt++) {
      if (this.closed) throw new StateSyncError("CLOSED", "the snapshot store is closed");
      try {
        const db = await this.database.get();
        this.opened = true;
        this.stalled = false;
        return await onDatabase(db);
      } catch (err) {
        if (isStateSyncError(err, "CORRUPT_SNAPSHOT")) throw err;
        if (this.closed) throw new StateSyncError("CLOSED", "the snapshot store is closed");
        if (err instanceof DatabaseOpenTimeoutError) return this.openTimedOut(err, inMemory);
        const reason = fallbackReason(err);
        this.database.reset();
        if (reason !== "failed") {
          this.fallBack(reason, err);
        } else if (!this.opened) {
          if (attempt > 0) this.fallBack(reason, err);
        } else if (attempt + 1 >= this.reopen.attempts) {
          this.warn(
            "failed",
            `IndexedDB "${this.database.name}" failed ${attempt + 1} times in a row ` +
              `(${describeError(err)}): this call is served in memory; the next one tries again`,
            err,
          );
          return inMemory(this.spare);
        } else {
          if (!interrupted) {
            interrupted = true;
            this.warn(
              "interrupted",
              `IndexedDB "${this.database.name}" failed under a call (${describeError(err)}): ` +
                "reopening with a backoff",
              err,
            );
          }
          const { baseMs, capMs } = this.reopen;
          await new Promise((resolve) =>
            setTimeout(resolve, reopenDelay(attempt + 1, baseMs, capMs)),
          );
        }
      }
    }
    return inMemory(this.memory);
  }

  /**
   * The open of the database did not answer in time: this call alone is served from
   * {@link spare}, warned once per stall; the next call opens again (the late connection, if
   * any, was closed by `openDatabase`).
   */
  private openTimedOut<T>(
    err: DatabaseOpenTimeoutError,
    inMemory: (memory: MemorySnapshotStore) => Promise<T>,
  ): Promise<T> {
    this.database.reset();
    if (!this.stalled) {
      this.stalled = true;
      this.warn(
        "failed",
        `${err.message}: this call is served in memory; the next one opens the database again`,
        err,
      );
    }
    return inMemory(this.spare);
  }

  private warn(
    reason: SnapshotWarningReason,
    message: string,
    cause: unknown,
    fallback = false,
  ): void {
    try {
      this.onWarning(new SnapshotStoreWarning(message, reason, { cause, fallback }));
    } catch {
      // a warning listener must not turn a fallback into a failure
    }
  }

  private fallBack(reason: SnapshotFallbackReason, cause: unknown): void {
    if (this.memory) return;
    this.memory = new MemorySnapshotStore();
    this.reason = reason;
    this.database.close();
    this.warn(
      reason,
      `IndexedDB "${this.database.name}" cannot be used (${reason}; ${describeError(cause)}): ` +
        "snapshots are kept in memory only and will not survive a reload",
      cause,
      true,
    );
  }
}
