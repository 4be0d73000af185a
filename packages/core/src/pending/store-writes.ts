import { settledWithin } from "../backoff.js";

/** How long anything waits for a store write before going on without it, ms. */
export const STORE_WAIT_MS = 2_000;

/**
 * The offline queue's writes to its store that have not finished, and how long to wait for them
 * (docs/offline.md, "Tabs": a write behind another tab's transaction that never ends).
 *
 * Invariants:
 * 1. No wait lasts past `STORE_WAIT_MS` after the oldest unfinished write started: the stores
 *    run writes in order (IndexedDB behind every earlier transaction over its stores, the file
 *    store one record at a time), so once that write is late every later one is too, and waiting
 *    for each in turn cost about 4 s per update while a frozen tab held the database.
 * 2. Waiting orders nothing: a store applies one record's writes in the order they were called
 *    (`PendingQueue`), so a delete is issued at once, never after a wait that may run out (a
 *    delete issued after a 2 s wait overtook a slower put in `FilePendingStore`, and a delete
 *    chained after the put reached a queue closed meanwhile: a discarded update came back).
 */
export class StoreWrites {
  /** Unfinished writes and when each started (ms), oldest first. */
  private readonly started = new Map<Promise<unknown>, number>();

  /** Tracks `write` until it settles; returns it. */
  track<T>(write: Promise<T>): Promise<T> {
    this.started.set(write, Date.now());
    const done = () => this.started.delete(write);
    void write.then(done, done);
    return write;
  }

  /** Waits for `work` until the deadline of invariant 1; true when it settled in time. */
  wait(work: Promise<unknown>): Promise<boolean> {
    const oldest = this.started.values().next().value as number | undefined;
    return settledWithin(work, Math.max(0, (oldest ?? Date.now()) + STORE_WAIT_MS - Date.now()));
  }

  /** Waits for every unfinished write, at most `STORE_WAIT_MS` from now (`close()`). */
  async settle(): Promise<void> {
    const until = Date.now() + STORE_WAIT_MS;
    while (this.started.size > 0 && Date.now() < until) {
      await settledWithin(Promise.allSettled([...this.started.keys()]), until - Date.now());
    }
  }
}
