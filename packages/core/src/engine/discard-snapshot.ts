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
 * Discards the snapshot under `key` of `store`, then reports a `CORRUPT_SNAPSHOT` saying why
 * (`problem`) and what became of it, as the store's `delete` answered: "discarded the local
 * snapshot: …" (`details.deleted: true`) once it is deleted, else "ignoring the local snapshot:
 * …" and why it is still there (`details.deleted: false`; `kept: true` when the delete failed,
 * e.g. a `FileSnapshotStore` never removes a directory in the file's place). Before, the report
 * said "discarding" before the delete ran, also of what stayed (a new user's trial).
 * With `kept`, a snapshot the log no longer agrees with (another identity, ahead of
 * the log, another entry at its revision), it is first saved under
 * {@link replacedSnapshotKey}: a server that lost its store, and the stream created again,
 * left the replicas' snapshots as the last copy of the state, and each replica deleted its own
 * when it opened (a new user's trial). Each wait on the store is bounded by `waitMs` (ms); a
 * failed save or delete changes nothing else (the report says whether the copy was kept).
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
  const deleted = store ? await answer(() => store.delete(key), waitMs) : { value: undefined };
  const left =
    deleted === "late"
      ? { why: `its deletion did not finish within ${waitMs} ms`, details: { deleted: false } }
      : "error" in deleted
        ? {
            why: `it is left in place: deleting it failed (${messageOf(deleted.error)})`,
            details: { deleted: false, kept: true },
          }
        : undefined;
  const message = left
    ? `ignoring the local snapshot: ${problem}${also}; ${left.why}`
    : `discarded the local snapshot: ${problem}${also}`;
  const details = { ...(left?.details ?? { deleted: true }), ...(keptAs && { keptAs }) };
  report(new StateSyncError("CORRUPT_SNAPSHOT", message, { details }));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A store's call bounded by `waitMs`: its value, or why there is none. */
async function answer<T>(
  call: () => Promise<T>,
  waitMs: number,
): Promise<{ value: T } | { error: unknown } | "late"> {
  const work = (async () => ({ value: await call() }))();
  work.catch(() => undefined);
  if (!(await settledWithin(work, waitMs))) return "late";
  return work.catch((error: unknown) => ({ error }));
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
  if ("value" in earlier && earlier.value && !shouldReplaceSnapshot(earlier.value, kept)) {
    if (!succeeded(await answer(() => store.delete(at), waitMs))) return false;
  }
  return succeeded(await answer(() => store.save(at, kept), waitMs));
}

/** Whether a call {@link answer} waited on succeeded. */
function succeeded(outcome: { value: unknown } | { error: unknown } | "late"): boolean {
  return outcome !== "late" && "value" in outcome;
}
