import { closedError, type StatusHub } from "../engine/status.js";

/**
 * The calls of the pending API that change the queue (`discard`, `clearPending`,
 * `rebindPending`), run one at a time, in call order (docs/offline.md, "Control").
 *
 * Invariants:
 * 1. A call made once `close()` was called rejects `CLOSED` and changes nothing: the replica no
 *    longer holds the queue (its lock is released, and another replica may hold it and push its
 *    records), so it could delete no record. Before, `discard(id)` resolved true and
 *    `clearPending()` to the count, with a `"drained"` event, while every record stayed stored
 *    and the next replica pushed them (a fresh-eyes trial).
 * 2. Each call starts once every call made before it has settled, so their results add up as if
 *    each had been awaited before the next was made. Before, `rebindPending()` and
 *    `clearPending()` made together both resolved to every update: the rebind resolved once the
 *    clear had removed the updates it said it queued again.
 * 3. A call made before `close()` takes effect: `close()` waits for it ({@link settled}). Each
 *    waits for the store at most as `StoreWrites` allows, so this holds `close()` up briefly.
 */
export class QueueChanges {
  /** The last call made, settled or not (never rejects). */
  private last: Promise<unknown> = Promise.resolve();

  constructor(private readonly status: StatusHub) {}

  /**
   * Runs `change` once the calls made before have settled (invariant 2); rejects `CLOSED` after
   * `close()` (invariant 1). Returns the run itself, not a wrapper, so a caller's reaction to it
   * comes before the next call starts.
   */
  run<T>(change: () => Promise<T>): Promise<T> {
    if (this.status.closed) return Promise.reject(closedError());
    const run = this.last.then(change);
    this.last = run.catch(() => undefined);
    return run;
  }

  /** Resolves once every call made so far has settled (invariant 3). */
  async settled(): Promise<void> {
    await this.last;
  }
}
