import { settledWithin } from "../backoff.js";
import { StateSyncError } from "../errors.js";
import {
  shouldReplaceSnapshot,
  type SnapshotRecord,
  type SnapshotStore,
} from "../snapshot-store.js";

/**
 * The store key under which a replica keeps the last snapshot that the log stopped agreeing
 * with (`<key> (replaced)`): one per snapshot key, the latest replacing an earlier one. A space
 * appears in no stream name or subject, so no key of `jetStreamSnapshotKey` is another's kept
 * copy (with `<key>.replaced`, state `o1.replaced` of a shared stream would have been `o1`'s: a
 * review). Read it with the store's `load` to recover its state (docs/guarantees.md, "Local
 * snapshots of a log that lost its history").
 */
export function replacedSnapshotKey(key: string): string {
  return `${key} (replaced)`;
}

/**
 * Discards the snapshot under `key` of `store` after a `CORRUPT_SNAPSHOT` report saying why
 * (`problem`). With `kept`, a snapshot the log no longer agrees with (another identity, ahead of
 * the log, another entry at its revision), it is first saved under
 * {@link replacedSnapshotKey}: a server that lost its store, and the stream created again,
 * left the replicas' snapshots as the last copy of the state, and each replica deleted its own
 * when it opened (a new user's trial). Each wait on the store is bounded by `waitMs`; a failed
 * save or delete changes nothing else (the report says whether the copy was kept).
 */
export async function discardSnapshot(
  store: SnapshotStore | undefined,
  key: string,
  problem: string,
  report: (error: StateSyncError) => void,
  waitMs: number,
  kept?: SnapshotRecord,
): Promise<void> {
  const keptAs =
    store && kept && (await keep(store, key, kept, waitMs)) ? replacedSnapshotKey(key) : undefined;
  const also = keptAs === undefined ? "" : `; its state is kept under the store key "${keptAs}"`;
  report(
    new StateSyncError("CORRUPT_SNAPSHOT", `discarding the local snapshot: ${problem}${also}`, {
      ...(keptAs === undefined ? {} : { details: { keptAs } }),
    }),
  );
  if (store) await answer(() => store.delete(key), waitMs);
}

/** A store's call bounded by `waitMs`: its value, or why there is none. */
async function answer<T>(
  call: () => Promise<T>,
  waitMs: number,
): Promise<{ value: T } | "failed" | "late"> {
  const work = (async () => ({ value: await call() }))();
  work.catch(() => undefined);
  if (!(await settledWithin(work, waitMs))) return "late";
  return work.catch(() => "failed" as const);
}

/**
 * Saves `kept` under `<key> (replaced)`; true when it is there. An earlier copy of the same log at
 * a higher revision (kept at an earlier discard: a second restore from an older copy) would make
 * the store keep that one (`shouldReplaceSnapshot`, never a newer revision of the same log), and
 * the report say this one was kept: it is deleted first, the latest replacing the earlier. A
 * store that does not answer the first call is not waited on again (the discard goes on).
 */
async function keep(
  store: SnapshotStore,
  key: string,
  kept: SnapshotRecord,
  waitMs: number,
): Promise<boolean> {
  const at = replacedSnapshotKey(key);
  const earlier = await answer(() => store.load(at), waitMs);
  if (earlier === "late") return false;
  if (typeof earlier === "object" && earlier.value && !shouldReplaceSnapshot(earlier.value, kept)) {
    if (typeof (await answer(() => store.delete(at), waitMs)) !== "object") return false;
  }
  return typeof (await answer(() => store.save(at, kept), waitMs)) === "object";
}
