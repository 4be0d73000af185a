/**
 * What `openSynchronizer`'s `onWarning` receives when the default offline queue
 * (`offlineQueue()` without `store`) cannot keep updates in IndexedDB: IndexedDB or Web Locks
 * missing, a write refused (quota), or the database deleted or upgraded under the queue. Its
 * queues then run in memory (`durable: false`) for the rest of the store's life; one warning
 * per store. `cause` is what IndexedDB (or the store) reported.
 */
export class PendingQueueWarning extends Error {
  override readonly name = "PendingQueueWarning";
  /** Always true: the queue keeps updates in memory only from now on. */
  readonly fallback = true;
  constructor(cause: unknown) {
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(
      `the offline queue keeps updates in memory only (durable: false; a reload loses them): ${why}`,
      { cause },
    );
  }
}
