import { settledWithin } from "../backoff.js";
import { StateSyncError } from "../errors.js";
import type { SnapshotRecord, SnapshotStore } from "../snapshot-store.js";

/**
 * The store key under which a replica keeps the last snapshot that the log stopped agreeing
 * with (`<key>.replaced`): one per snapshot key, the latest replacing an earlier one of another
 * log. Read it with the store's `load` to recover its state (docs/guarantees.md, "Local
 * snapshots of a log that lost its history").
 */
export function replacedSnapshotKey(key: string): string {
  return `${key}.replaced`;
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
  let keptAs: string | undefined;
  if (store && kept) {
    const saving = (async () => store.save(replacedSnapshotKey(key), kept))();
    saving.catch(() => undefined);
    const saved = await settledWithin(saving, waitMs);
    if (
      saved &&
      (await saving.then(
        () => true,
        () => false,
      ))
    )
      keptAs = replacedSnapshotKey(key);
  }
  const also = keptAs === undefined ? "" : `; its state is kept under the store key "${keptAs}"`;
  report(
    new StateSyncError("CORRUPT_SNAPSHOT", `discarding the local snapshot: ${problem}${also}`, {
      ...(keptAs === undefined ? {} : { details: { keptAs } }),
    }),
  );
  if (!store) return;
  const deleting = (async () => store.delete(key))();
  deleting.catch(() => undefined);
  await settledWithin(deleting, waitMs);
}
