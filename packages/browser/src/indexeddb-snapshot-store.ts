import {
  isStateSyncError,
  MemorySnapshotStore,
  shouldReplaceSnapshot,
  StateSyncError,
  type SnapshotRecord,
  type SnapshotStore,
} from "@statesync/core";
import type { IDBPDatabase } from "idb";
import { decodeSnapshot, encodeSnapshot } from "./snapshot-codec.js";
import { DatabaseBlockedError, SNAPSHOT_STORE, SnapshotDatabase } from "./snapshot-database.js";

/** Why an {@link IndexedDbSnapshotStore} fell back to memory. */
export type SnapshotFallbackReason =
  /** No IndexedDB, or the browser refuses it (private browsing, blocked site data). */
  | "unavailable"
  /** The origin's storage quota is used up. */
  | "quota"
  /** Another connection kept the database blocked longer than `blockedTimeoutMs`. */
  | "blocked"
  /** Any other IndexedDB failure. */
  | "failed";

/** What `onWarning` receives, once, when an {@link IndexedDbSnapshotStore} falls back to memory. */
export class SnapshotStoreWarning extends Error {
  override readonly name = "SnapshotStoreWarning";
  constructor(
    message: string,
    /** Why the store fell back. */
    readonly reason: SnapshotFallbackReason,
    options: { cause?: unknown } = {},
  ) {
    super(message, options);
  }
}

/** Options of {@link IndexedDbSnapshotStore}. */
export interface IndexedDbSnapshotStoreOptions {
  /** IndexedDB database name. Default `"statesync"`. */
  databaseName?: string;
  /** Told once when the store falls back to memory. Default `console.warn`. */
  onWarning?: (warning: SnapshotStoreWarning) => void;
  /**
   * How long to wait, in ms, for a database upgrade that a connection elsewhere blocks (one that
   * ignores `versionchange`) before falling back to memory. Default 3000.
   */
  blockedTimeoutMs?: number;
}

/** The stored record, or undefined when there is none or it is damaged (then it is replaced). */
function decodeOrUndefined(key: string, value: unknown): SnapshotRecord | undefined {
  if (value === undefined) return undefined;
  try {
    return decodeSnapshot(key, value);
  } catch {
    return undefined;
  }
}

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
 * - `save` reads and writes in ONE readwrite transaction and writes only when
 *   `shouldReplaceSnapshot` allows (never over a newer revision of the same log); IndexedDB runs
 *   readwrite transactions on one store one at a time, across tabs too, so concurrent saves end
 *   with the highest revision.
 * - `load` validates the value (shape with zod, checksum, `snapshotRecordSchema`) and throws
 *   `StateSyncError("CORRUPT_SNAPSHOT")` for a damaged one.
 * - The connection closes itself when another tab upgrades or deletes the database
 *   (`versionchange`) and reopens on the next call (see `SnapshotDatabase`).
 * - When IndexedDB cannot be used (no IndexedDB, private browsing, quota exceeded, a database
 *   blocked longer than `blockedTimeoutMs`, any other failure that a reopen does not cure) the
 *   store falls back to memory for the rest of its life: one {@link SnapshotStoreWarning} goes to
 *   `onWarning`, the save that failed is kept in memory, and no call rejects because of it.
 *   Snapshots then do not survive a reload; the replica catches up from the server instead.
 */
export class IndexedDbSnapshotStore implements SnapshotStore {
  private readonly database: SnapshotDatabase;
  private readonly onWarning: (warning: SnapshotStoreWarning) => void;
  private memory: MemorySnapshotStore | undefined;
  private reason: SnapshotFallbackReason | undefined;
  private closed = false;

  constructor(options: IndexedDbSnapshotStoreOptions = {}) {
    const name = options.databaseName ?? "statesync";
    if (typeof name !== "string" || name.length === 0) {
      throw new StateSyncError("VALIDATION", "databaseName must be a non-empty string");
    }
    const blockedTimeoutMs = options.blockedTimeoutMs ?? 3_000;
    if (!Number.isFinite(blockedTimeoutMs) || blockedTimeoutMs < 0) {
      throw new StateSyncError("VALIDATION", "blockedTimeoutMs must be a non-negative number");
    }
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

  load(key: string): Promise<SnapshotRecord | undefined> {
    return this.run(
      async (db) => {
        const value: unknown = await db.get(SNAPSHOT_STORE, key);
        return value === undefined ? undefined : decodeSnapshot(key, value);
      },
      (memory) => memory.load(key),
    );
  }

  async save(key: string, record: SnapshotRecord): Promise<void> {
    const value = encodeSnapshot(record);
    return this.run(
      async (db) => {
        const tx = db.transaction(SNAPSHOT_STORE, "readwrite");
        // Only IndexedDB requests are awaited in between, so the transaction stays active.
        const stored = await tx.store.get(key);
        if (shouldReplaceSnapshot(decodeOrUndefined(key, stored), record)) {
          await tx.store.put(value, key);
        }
        await tx.done;
      },
      (memory) => memory.save(key, record),
    );
  }

  delete(key: string): Promise<void> {
    return this.run(
      (db) => db.delete(SNAPSHOT_STORE, key),
      (memory) => memory.delete(key),
    );
  }

  /** Closes the connection; later calls reject with `CLOSED`. */
  async close(): Promise<void> {
    this.closed = true;
    this.database.close();
  }

  /**
   * Runs `onDatabase`; on a failure other than a corrupt snapshot, reopens and tries once more
   * (the connection may have been closed for another tab's upgrade), then falls back to memory.
   */
  private async run<T>(
    onDatabase: (db: IDBPDatabase) => Promise<T>,
    inMemory: (memory: MemorySnapshotStore) => Promise<T>,
  ): Promise<T> {
    if (this.closed) throw new StateSyncError("CLOSED", "the snapshot store is closed");
    for (let attempt = 0; !this.memory; attempt++) {
      try {
        return await onDatabase(await this.database.get());
      } catch (err) {
        if (isStateSyncError(err, "CORRUPT_SNAPSHOT")) throw err;
        const reason = fallbackReason(err);
        if (attempt === 0 && reason === "failed") {
          this.database.reset();
          continue;
        }
        this.fallBack(reason, err);
      }
    }
    return inMemory(this.memory);
  }

  private fallBack(reason: SnapshotFallbackReason, cause: unknown): void {
    if (this.memory) return;
    this.memory = new MemorySnapshotStore();
    this.reason = reason;
    this.database.close();
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    const warning = new SnapshotStoreWarning(
      `IndexedDB "${this.database.name}" cannot be used (${reason}; ${why}): snapshots are ` +
        "kept in memory only and will not survive a reload",
      reason,
      { cause },
    );
    try {
      this.onWarning(warning);
    } catch {
      // a warning listener must not turn a fallback into a failure
    }
  }
}
