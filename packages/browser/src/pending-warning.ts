import { isStateSyncError } from "@statesync/core";
import { SnapshotStoreWarning } from "./indexeddb-snapshot-store.js";

/**
 * What `openSynchronizer`'s `onWarning` receives when the default offline queue
 * (`offlineQueue()` without `store`) cannot keep updates in IndexedDB: IndexedDB or Web Locks
 * missing, a write refused (quota), or the database deleted or upgraded under the queue. Its
 * queues then run in memory (`durable: false`) for the rest of the store's life; one warning
 * per store. `cause` is what IndexedDB (or the store) reported. A `SnapshotStoreWarning` (reason
 * `"queue-in-memory"`, `fallback` true), so that an `onWarning` typed for the snapshot store's
 * warnings, as apps wrote it before the queue reported through it, still takes it.
 *
 * A queue's stored row found damaged and repaired (a `CORRUPT_PENDING` cause: a highest seq above
 * 2^52 that an earlier version stored) comes as reason `"queue-damaged"`, `fallback` false: the
 * queue stays in IndexedDB.
 */
export class PendingQueueWarning extends SnapshotStoreWarning {
  override readonly name: string = "PendingQueueWarning";
  constructor(cause: unknown) {
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    const damaged = isStateSyncError(cause, "CORRUPT_PENDING");
    super(
      damaged
        ? `the offline queue's stored row was damaged and is repaired: ${why}`
        : `the offline queue keeps updates in memory only (durable: false; a reload loses them): ${why}`,
      damaged ? "queue-damaged" : "queue-in-memory",
      { cause, fallback: !damaged },
    );
  }
}
