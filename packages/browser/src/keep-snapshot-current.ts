import type { StateSynchronizer } from "@statesync/core";

/** A save shorter than this (ms: a long task's length) is followed by the next one at once. */
const SHORT_SAVE_MS = 50;

/** What {@link keepSnapshotCurrent} needs of a replica. */
export type SnapshotSaving = Pick<
  StateSynchronizer<unknown>,
  "subscribe" | "saveSnapshot" | "revision" | "status" | "stats"
>;

/**
 * Keeps the replica's local snapshot current: after every applied batch (the replica's
 * `subscribe` notification) it saves the snapshot, so that a page that is closed, reloaded or
 * killed restores (nearly) the latest state without relying on `pagehide` or
 * `visibilitychange`, which browsers do not let finish an IndexedDB write (issue 10, case 9).
 *
 * Coalescing (after replicache's process scheduler): at most one save runs; batches applied
 * meanwhile only mark the snapshot as behind, and one save of the newest state starts after the
 * running one: at once when the last save took less than 50 ms (a small state), else
 * after waiting as long as it took, so that saving a large state takes at most about half of the
 * page's time. The stored revision therefore trails the applied one by at most the batches
 * applied during the last two saves (and that wait). A revision already saved is not
 * saved again; the state at the time of the call is saved at once unless it is the one just
 * restored from the store. Failures are reported by the replica as `error` events (`SNAPSHOT_FAILED`) and
 * the next batch tries again.
 *
 * Returns a function that stops it (a save already running finishes).
 */
export function keepSnapshotCurrent(sync: SnapshotSaving): () => void {
  let running = false;
  let behind = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // A state just restored from the store and not moved since needs no save.
  let savedRevision =
    sync.stats.snapshotsRestored > 0 && sync.stats.entriesFetched === 0 ? sync.revision : -1;

  const start = () => {
    timer = undefined;
    behind = false;
    if (stopped || sync.status === "closed" || sync.revision === savedRevision) return;
    running = true;
    const revision = sync.revision;
    const began = performance.now();
    sync.saveSnapshot().then(
      () => after(revision, began),
      // Reported by the replica (an `error` event); the next batch tries again.
      () => after(-1, began),
    );
  };

  const after = (saved: number, began: number) => {
    running = false;
    if (saved >= 0) savedRevision = saved;
    if (stopped || !behind) return;
    const took = performance.now() - began;
    timer = setTimeout(start, took < SHORT_SAVE_MS ? 0 : took);
  };

  const onApplied = () => {
    if (running || timer !== undefined) behind = true;
    else start();
  };
  const unsubscribe = sync.subscribe(onApplied);
  // Batches applied before this was called (a catch-up with `waitFor: "synced"`) count too.
  onApplied();

  return () => {
    stopped = true;
    unsubscribe();
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
  };
}
