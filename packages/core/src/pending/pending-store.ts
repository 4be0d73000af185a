import { z } from "zod/v4";
import { MAX_COMMAND_ARGS_DEPTH } from "../entry-limits.js";
import { StateSyncError } from "../errors.js";
import { findJsonProblem } from "../json.js";

/**
 * The port of the offline queue: where a replica persists its pending updates (docs/offline.md).
 * Narrow like {@link SnapshotStore}: one record per pending update, so that thousands pending
 * cost writes proportional to the changes (one `put` per queued update, one `delete` per
 * committed or refused one), never a rewrite of the whole queue.
 *
 * Implementations: `MemoryPendingStore` (core, not durable), `FilePendingStore` (Node, in the
 * snapshot directory), the browser package's IndexedDB store; all pass
 * `runPendingStoreConformance` from `@statesync/core/testing`.
 */
export interface PendingStore {
  /**
   * Takes the queue of one state (`key`, the snapshot key) for one owner, exclusively: a second
   * `open` of the same `(key, owner)` while the first is open rejects with
   * `StateSyncError("QUEUE_LOCKED")` (in another process too, for stores shared between
   * processes). A lock left by a holder that died (a killed process) is taken over. Different
   * owners of one key are different queues. `owner` is a stable name the app chooses (1-64
   * printable ASCII characters, no `/`): client ids are random, an owner name is not.
   *
   * Rejects `VALIDATION` for a bad key or owner, `QUEUE_FAILED` when the storage cannot be used;
   * never for a damaged record (`load` hands those back apart, see there).
   */
  open(key: string, owner: string): Promise<PendingQueue>;
  /**
   * The owners of `key` whose queue this store holds, in no particular order: every owner
   * opened before (a queue exists from its first `open`, records or not, also while a holder
   * has it open) and every owner with records stored. Read only: it creates no queue and takes
   * no lock. Optional: without it, who looks for queues left behind (the browser's drain of
   * dead tabs' slots, docs/offline.md "Tabs") opens each owner it could find, which creates the
   * queue of every one never used (a new user's trial: 32 empty IndexedDB rows for one tab).
   * Rejects `VALIDATION` for a bad key, `QUEUE_FAILED` when the storage cannot be read.
   */
  owners?(key: string): Promise<string[]>;
  /** Releases resources (open queues stay usable until closed). Optional. */
  close?(): Promise<void>;
}

/**
 * One owner's queue of one state, held under the lock until `close()`. Writes of different seqs
 * may overlap. Writes of one seq take effect in the order they were called, also when the
 * caller does not wait for the first: a `delete` called while that record's `put` is still
 * running removes what the put stores (the engine issues a discarded or committed update's
 * delete without waiting for a put held up behind another tab's transaction). A write called
 * before `close()` still takes effect, or fails, as it would have.
 */
export interface PendingQueue {
  /**
   * True when what `put` stored survives the process (a disk, IndexedDB); false for a queue held
   * in memory (`MemoryPendingStore`, or a store that fell back to memory: quota, private mode).
   */
  readonly durable: boolean;
  /**
   * The origin of the records stored without one ({@link PendingRecord.origin}: records written
   * before records carried their origin): drawn when the queue is first created, then the same
   * at every `open` of this `(key, owner)`. At most 64 characters ({@link originSchema}). The
   * engine never queues new updates under it: each session draws an origin of its own, since a
   * copy of the storage (`cp -r`, a cloned volume or profile) carries this one too
   * (docs/offline.md, "Identity").
   */
  readonly origin: string;
  /**
   * The records, by ascending `seq`, and the next sequence number: greater than every `seq`
   * ever put in this queue (deleted and cleared ones included), so an identity is never reused.
   *
   * A record that cannot be read (damaged storage, not JSON, a checksum or `pendingRecordSchema`
   * that fails, a seq other than the one it is filed under) never fails the load and is never in
   * `records`: it is listed in `damaged` (absent when there is none), by ascending seq, and taken
   * out of the queue in the same call (deleted, or kept aside where `load` never reads it
   * again), so it is handed back once. Its seq still counts for `nextSeq`, after a reopen too,
   * unless it is filed under no record's key or name (a key or file name above 2^52, say, or a
   * file name the store does not write, such as an unpadded one): that one is damaged and never
   * counted (no seq would be left after it), and its reported `seq` is only the number in its
   * name (it may equal a live record's).
   * The engine reports them as one `CORRUPT_PENDING` event.
   */
  load(): Promise<PendingLoad>;
  // The engine starts new updates above `nextSeq` and above the clock (`firstSeq`), since a seq
  // sent while its record was on its way, whose write then never happened, is in the log only.
  /**
   * Stores one record (a write of that record alone). Resolves once it is as durable as the
   * store gets. A `seq` already present is replaced. Rejects `QUEUE_FAILED` when it could not
   * be stored (then it is not in the queue), `VALIDATION` for a record that fails the schema
   * ({@link checkPendingRecord}: nothing stored).
   */
  put(record: PendingRecord): Promise<void>;
  /**
   * Removes the records of `seqs` (absent ones are ignored). Rejects `QUEUE_FAILED`, or
   * `VALIDATION` when `seqs` is no array of seqs ({@link checkPendingSeqs}: nothing removed).
   */
  delete(seqs: readonly number[]): Promise<void>;
  /** Removes every record; `nextSeq` keeps growing. Rejects `QUEUE_FAILED`. */
  clear(): Promise<void>;
  /** Releases the lock. Later calls reject `CLOSED`. Idempotent. */
  close(): Promise<void>;
}

/** What {@link PendingQueue.load} returns. */
export interface PendingLoad {
  records: PendingRecord[];
  nextSeq: number;
  /** The records that could not be read, taken out of the queue by this load; absent if none. */
  damaged?: DamagedPendingRecord[];
}

/** A stored pending update that could not be read (see {@link PendingQueue.load}). */
export interface DamagedPendingRecord {
  /** The seq it was filed under (its file name, its key): what is left of its identity. */
  readonly seq: number;
  /** Why it could not be read, e.g. "not JSON", "checksum mismatch", "fails the schema: ...". */
  readonly reason: string;
  /** Where the store kept it for inspection (a file path), when it kept it aside. */
  readonly keptAs?: string;
  /**
   * True when the store could neither keep it aside nor delete it (a file it could not move):
   * it stays where it was, out of this load's queue, and the next load hands it back again.
   * Neither this nor `keptAs`: the store deleted it.
   */
  readonly leftInPlace?: true;
  /** What was stored, as text, at most {@link DAMAGED_CONTENT_CHARS} characters, when deleted. */
  readonly content?: string;
}

/** How much of a deleted damaged record {@link DamagedPendingRecord.content} holds. */
export const DAMAGED_CONTENT_CHARS = 1_024;

/**
 * `value` (a record read from a store, filed under `seq`) as a valid {@link PendingRecord}, or
 * why it is not one (stores use it, so that reasons read alike). Never throws.
 */
export function readPendingRecord(
  value: unknown,
  seq: number,
): { record: PendingRecord } | { reason: string } {
  if (!isPendingSeq(seq)) {
    return { reason: `filed under ${String(seq)}, not a seq (1 to 2^52)` };
  }
  const parsed = pendingRecordSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return {
      reason: `fails the record schema: ${issue?.path.join(".") || "record"}: ${issue?.message ?? ""}`,
    };
  }
  if (parsed.data.seq !== seq) {
    return { reason: `holds seq ${parsed.data.seq}, filed under ${seq}` };
  }
  return { record: parsed.data as PendingRecord };
}

/**
 * One pending update as stored (format 1 of the record). Only named commands are stored: a plain
 * recipe is a function and cannot be persisted (docs/offline.md).
 */
export interface PendingRecord {
  readonly format: 1;
  /** Position in the queue and, with `origin`, the update's identity in the log. */
  readonly seq: number;
  /**
   * The origin the update was queued under: the session's (docs/offline.md, "Identity"). Absent
   * in records written before records carried it: those take the queue's stored origin
   * ({@link PendingQueue.origin}), the one they were sent under.
   */
  readonly origin?: string;
  /** `"update"`: a conditional update running the command; `"command"`: an unconditional one. */
  readonly kind: "update" | "command";
  /** The command's name and its arguments (JSON). */
  readonly name: string;
  readonly args: unknown;
  /** When it was queued, ms since the epoch. */
  readonly queuedAt: number;
  /** The model version that queued it (docs/versions.md: how a queued command is read later). */
  readonly mv: number;
  /**
   * The log it was queued for: `LogInfo.identity` of the log the replica's state came from (the
   * identity a local snapshot is checked by). It is pushed into that log only; found on another
   * one (the stream deleted and created again, another server), it is set aside for the app
   * (docs/offline.md, "One log"). Absent when the replica did not know its log yet (opened
   * offline without a local snapshot) and in records of older SDKs: the engine then binds it
   * to the log of the local snapshot, else to the first log it finds, and stores that.
   */
  readonly logIdentity?: string;
}

/** Origins: what `PendingQueue.origin`, a record's `origin` and an entry's `origin` may hold. */
export const originSchema = z.string().regex(/^[!-~]{1,64}$/);

/** Log identities (`LogInfo.identity`) as a record holds them. */
export const logIdentitySchema = z.string().min(1).max(4_096);

/**
 * The largest seq a pending record may have, and the largest `nextSeq - 1` a store keeps (the
 * Node store's `queue.json` too): half the safe integers. Seqs start at the clock × 1,024
 * ({@link firstSeq}), which reaches 2^52 in the year 2112, so a larger one is damage (a file
 * named with seq 2^53 - 1 made every later update of its queue fail: no seq was left; a
 * hostile-input trial). One bound wherever a seq enters a store: a record, a `delete`, a record
 * file's name or key, the queue's highest seq.
 */
export const MAX_PENDING_SEQ = 2 ** 52;

/** A seq: a positive integer up to {@link MAX_PENDING_SEQ}. */
export const pendingSeqSchema = z.number().int().positive().max(MAX_PENDING_SEQ);

/** Whether `value` is a seq (a positive integer up to {@link MAX_PENDING_SEQ}). */
export function isPendingSeq(value: unknown): value is number {
  return (
    Number.isSafeInteger(value) && (value as number) > 0 && (value as number) <= MAX_PENDING_SEQ
  );
}

/** zod schema of {@link PendingRecord}: stores validate what they load with it. */
export const pendingRecordSchema = z.object({
  format: z.literal(1),
  seq: pendingSeqSchema,
  origin: originSchema.optional(),
  kind: z.enum(["update", "command"]),
  name: z.string().min(1).max(256),
  // Walked iteratively: arguments no entry could carry never reach a store's JSON.stringify.
  args: z
    .unknown()
    .refine(
      (args) => findJsonProblem(args, MAX_COMMAND_ARGS_DEPTH) === undefined,
      `arguments must be JSON nested at most ${MAX_COMMAND_ARGS_DEPTH} levels deep`,
    ),
  queuedAt: z.number().int().nonnegative(),
  mv: z.number().int().nonnegative(),
  logIdentity: logIdentitySchema.optional(),
});

/**
 * The record a queue's `put` stores, or `VALIDATION` (nothing stored) when `record` fails
 * {@link pendingRecordSchema}. Keys the schema does not know are left out, as `load` leaves
 * them out.
 */
export function checkPendingRecord(record: unknown): PendingRecord {
  const parsed = pendingRecordSchema.safeParse(record);
  if (!parsed.success) {
    throw new StateSyncError("VALIDATION", "invalid pending record", { cause: parsed.error });
  }
  return parsed.data as PendingRecord;
}

/** The seqs a queue's `delete` takes: an array of them ({@link pendingSeqSchema}). */
const seqsSchema = z.array(pendingSeqSchema);

/**
 * `seqs`, or `VALIDATION` (nothing removed) when it is no array of seqs (positive integers up
 * to {@link MAX_PENDING_SEQ}): `"12"`, `[1, "2"]` or a `Set` are refused as a whole, not read as
 * seqs.
 */
export function checkPendingSeqs(seqs: unknown): readonly number[] {
  const parsed = seqsSchema.safeParse(seqs);
  if (!parsed.success) {
    throw new StateSyncError(
      "VALIDATION",
      "pending seqs are an array of positive integers up to 2^52",
      {
        cause: parsed.error,
      },
    );
  }
  return parsed.data;
}

/**
 * Whether `value` has the shape of a {@link PendingStore}: an object whose `open` is a function,
 * and `close`, when present, too. What every option taking a pending store checks.
 */
export function isPendingStoreLike(value: unknown): value is PendingStore {
  if (typeof value !== "object" || value === null) return false;
  const store = value as Record<string, unknown>;
  return (
    typeof store.open === "function" &&
    (store.close === undefined || typeof store.close === "function")
  );
}

/** Owner names: 1-64 printable ASCII characters without spaces or `/` (they name files). */
export const ownerSchema = z
  .string()
  .regex(/^[!-.0-~]{1,64}$/, "an owner is 1-64 printable ASCII characters, no spaces or '/'");

/** Seqs per millisecond of the clock that {@link firstSeq} reserves for one session. */
const SEQS_PER_MS = 1_024;

/**
 * The first seq a queue opened at `now` (ms since the epoch) hands out: above `nextSeq` (what the
 * store holds) and above `now × 1,024`, so that a seq a session sent whose record never reached
 * the store (the write failed, or was still held up behind another tab's transaction when the
 * tab died) is not handed out by a later session: the log would take the new update for a re-send
 * and skip it. A later session starts above such a seq unless its clock is behind the earlier
 * one's by more than the seqs it handed out / 1,024 ms (it was set back), or it handed out over
 * 1,024 per ms on average. Safe integers last until the year 2248. (Since each session queues
 * under an origin of its own, such a seq can no longer meet a later session's update; the rule
 * stays as a second guard, and keeps seqs growing across sessions, as `PendingUpdate.id` says.)
 */
export function firstSeq(nextSeq: number, now: number): number {
  return Math.max(nextSeq, Math.floor(now) * SEQS_PER_MS);
}
