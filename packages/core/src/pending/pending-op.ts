import type { CommandEntry } from "../entry.js";
import { StateSyncError } from "../errors.js";
import type { CommandMap, Model, UpdateContext } from "../model.js";
import type { RecipeRun } from "../engine/recipes.js";
import { parseCommand, type ArgsCarrier } from "../engine/options.js";
import { commandForLog } from "../versions.js";
import { refuseThenable } from "../synchronous.js";
import type { QueuedPromise } from "../synchronizer-types.js";
import type { DamagedPendingRecord, PendingRecord } from "./pending-store.js";

/** One pending update as the application sees it (`StateSynchronizer.pending`). */
export interface PendingUpdate {
  /**
   * Its place in the queue (the `seq` of its identity in the log, docs/offline.md): a safe
   * integer, larger for later updates of the queue but not consecutive across restarts (a
   * queue starts above its clock × 1,024 at every open).
   */
  readonly id: number;
  /**
   * The queue session it was queued under: `[origin, id]` is its identity in the log
   * (docs/offline.md, "Identity"). `appliedSeq(origin)` says whether a state includes it.
   */
  readonly origin: string;
  /** `"update"`: conditional (`update`); `"command"`: unconditional (`updateUnconditionally`). */
  readonly kind: "update" | "command";
  /** The command's name and arguments; undefined for a plain recipe (kept in memory only). */
  readonly command: string | undefined;
  readonly args: unknown;
  /** When it was queued, ms since the epoch. */
  readonly queuedAt: number;
  /** Appends tried for it by this replica so far (not persisted: 0 after a restart). */
  readonly attempts: number;
  /**
   * Whether it is stored in a durable pending store: it survives a crash or a reload (false:
   * memory only, or its record still being written, see `storing`). Before, it was true from the
   * call on, and a page said "saved on this device" for seconds before the records were written
   * (stop 26's trial: 976 of 1,000 such edits lost to a reload).
   */
  readonly durable: boolean;
  /** True while its record is being written to a durable store (`durable` once it is). */
  readonly storing: boolean;
  /**
   * The log it was queued for (`LogInfo.identity`, docs/offline.md "One log"); undefined until
   * the replica knows its log.
   */
  readonly logIdentity: string | undefined;
  /**
   * True when it was queued for another log than the one this replica stands on (the stream was
   * deleted and created again, or this is another server): it is not pushed, not in the
   * optimistic view, and stays stored until `rebindPending()` pushes it into this log, or
   * `discard(id)` or `clearPending()` removes it (a `LOG_REPLACED` event said so).
   */
  readonly otherLog: boolean;
}

/** What `update` tells once an update is queued (`.queued` of the promise it returns). */
export interface QueuedInfo {
  /**
   * See {@link PendingUpdate.id}; undefined when the replica has no pending queue (no `pending`
   * option): the update is then sent at once and held in memory only.
   */
  readonly id: number | undefined;
  /** True when the update is stored durably: it survives a crash or a reload. */
  readonly durable: boolean;
}

/** What the push loop learns of one append. */
export type SendOutcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** A pending update inside the queue. */
export interface PendingOp extends RecipeRun {
  /**
   * The origin it was queued under (its session's, or its record's): with `seq`, its identity.
   * Changed only before it was ever sent (`OfflineQueue`, invariant 6).
   */
  origin: string;
  readonly seq: number;
  readonly kind: "update" | "command";
  readonly args: unknown;
  readonly queuedAt: number;
  persisted: boolean;
  attempts: number;
  /** `queued`: waiting; `sending`: handed to the writer; `done`: committed, refused, discarded. */
  state: "queued" | "sending" | "done";
  /** Settles once its record is stored (at once for one kept in memory). */
  stored: Promise<void>;
  /** True once its record's put has succeeded (a record loaded from the store: at once). */
  recorded?: boolean;
  /** Why it must be refused before any attempt (a stored record this model cannot run). */
  invalid?: StateSyncError | undefined;
  /** The log it is bound to (`LogInfo.identity`); undefined until known (`pending/log-binding.ts`). */
  logIdentity?: string | undefined;
  /** True while it is set aside: bound to another log than this replica's (`log-binding.ts`). */
  otherLog?: boolean;
  /** The record it was loaded from (its binding is stored into a copy of it, unchanged else). */
  loaded?: PendingRecord;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** A new update of this session (its record not stored yet), and its caller's promise. */
export function newOp(
  run: RecipeRun,
  identity: Pick<PendingOp, "origin" | "seq" | "kind" | "logIdentity">,
): { op: PendingOp; result: Promise<unknown> } {
  let resolve!: (v: unknown) => void;
  let reject!: (e: unknown) => void;
  const result = new Promise<unknown>((res, rej) => ((resolve = res), (reject = rej)));
  const op: PendingOp = {
    ...run,
    ...identity,
    args: run.command?.args,
    queuedAt: Date.now(),
    persisted: run.command !== undefined,
    attempts: 0,
    state: "queued",
    stored: Promise.resolve(),
    resolve,
    reject,
  };
  return { op, result };
}

/**
 * The run of a named command with parsed arguments (what `update(name, args)` queues), for the
 * entry that will carry them (`carrier`: an update entry, or a command entry of their own).
 */
export function commandRun<S>(
  model: Model<S, CommandMap<S>>,
  name: string,
  args: unknown,
  carrier: ArgsCarrier,
): Pick<RecipeRun, "run" | "command"> {
  const { definition, args: parsed } = parseCommand(model, name, args, carrier);
  return {
    // An async apply is refused here, where its name is known (it used to be dropped with
    // `void`: such a command committed what it wrote before its first await).
    run: (draft, ctx: UpdateContext) =>
      refuseThenable(definition.apply(draft as never, parsed, ctx), name),
    command: { name, args },
  };
}

/**
 * A stored record as an op of this model (docs/offline.md, docs/versions.md): a record queued by
 * an older model version goes through the model's `upgradeCommand`, as the log reads such a
 * command; one it cannot run (unknown, arguments its schema refuses, not upgraded) is marked
 * `invalid` and refused by the push loop; so is a record of a newer version than the model (an
 * app rolled back), as the log skips a command of a version newer than its own. A record
 * without an origin (written before records carried one) takes `storedOrigin`, the queue's.
 */
export function opOfRecord<S>(
  model: Model<S, CommandMap<S>>,
  record: PendingRecord,
  storedOrigin: string,
): PendingOp {
  const base = {
    origin: record.origin ?? storedOrigin,
    logIdentity: record.logIdentity,
    loaded: record,
    seq: record.seq,
    kind: record.kind,
    args: record.args,
    queuedAt: record.queuedAt,
    persisted: true,
    recorded: true,
    attempts: 0,
    state: "queued" as const,
    stored: Promise.resolve(),
    resolve: () => undefined,
    reject: () => undefined,
  };
  let name = record.name;
  let args = record.args;
  if (record.mv !== model.version) {
    const read = commandForLog(model, undefined, asCommandEntry(record));
    if (read instanceof StateSyncError) return invalidOp(base, record, read);
    ({ name, args } = read);
  }
  try {
    return { ...base, ...commandRun(model, name, args, record.kind) };
  } catch (e) {
    return invalidOp(base, record, e as StateSyncError);
  }
}

function invalidOp(
  base: Omit<PendingOp, "run" | "command">,
  record: PendingRecord,
  invalid: StateSyncError,
): PendingOp {
  return {
    ...base,
    command: { name: record.name, args: record.args },
    run: () => {
      throw invalid;
    },
    invalid,
  };
}

/**
 * The record of a named command's op, as the store keeps it (model version `mv`); a loaded op's
 * record as it was loaded (a record of another model version keeps its own), with its binding.
 */
export function recordOf(op: PendingOp, mv: number): PendingRecord {
  if (op.loaded) {
    // A binding is only ever added (unbound to bound), never taken away.
    return op.logIdentity === undefined ? op.loaded : { ...op.loaded, logIdentity: op.logIdentity };
  }
  const { origin, seq, kind, queuedAt, logIdentity } = op;
  return {
    format: 1,
    seq,
    origin,
    kind,
    name: op.command!.name,
    args: op.command!.args,
    queuedAt,
    mv,
    ...(logIdentity !== undefined ? { logIdentity } : {}),
  };
}

function asCommandEntry(record: PendingRecord): CommandEntry {
  return {
    v: 1,
    kind: "command",
    ts: record.queuedAt,
    client: "",
    seed: 0,
    name: record.name,
    args: record.args,
    mv: record.mv,
  };
}

/** The public view of an op (in a queue that is `durableQueue`: stored, or memory only). */
export function describeOp(op: PendingOp, durableQueue = true): PendingUpdate {
  const stored = durableQueue && op.persisted;
  return {
    id: op.seq,
    origin: op.origin,
    kind: op.kind,
    command: op.command?.name,
    args: op.command?.args,
    queuedAt: op.queuedAt,
    attempts: op.attempts,
    durable: stored && op.recorded === true,
    storing: stored && op.recorded !== true,
    logIdentity: op.logIdentity,
    otherLog: op.otherLog === true,
  };
}

/**
 * Whether a failed append refuses the update for good (docs/offline.md): its command threw, its
 * result or arguments fail the model, it can never fit an entry, the model cannot run it. Other
 * failures (the log unreachable, an unknown outcome, a denial) leave it queued.
 */
export function refuses(error: unknown): boolean {
  if (!(error instanceof StateSyncError)) return true; // what the command threw
  return (
    error.code === "VALIDATION" ||
    error.code === "PAYLOAD_TOO_LARGE" ||
    error.code === "UNKNOWN_COMMAND" ||
    error.code === "OUTDATED_COMMAND" ||
    error.code === "COMMAND_FAILED" ||
    error.code === "UPDATE_REFUSED"
  );
}

/**
 * What the caller of an update still queued at `close()` gets: `error` (`CLOSED`) saying whether
 * the update stays queued (`details.queued`), its record was still being stored and stays
 * queued only if that write completes (`details.storing`), or it was held in memory only.
 */
export function closedWhileQueued(
  op: PendingOp,
  error: StateSyncError,
  durableQueue: boolean,
): StateSyncError {
  const storing = op.persisted && op.recorded !== true;
  const what = !op.persisted
    ? "the update was held in memory only and is dropped"
    : storing
      ? "the update's record was still being stored: it stays queued if that write completes"
      : "the update stays queued";
  const queued = op.persisted && !storing;
  return new StateSyncError(error.code, `${error.message}; ${what}`, {
    cause: error,
    details: { id: op.seq, queued, storing, durable: queued && durableQueue },
  });
}

/** Why a pending update left the queue refused (`UPDATE_REFUSED`, with what refused it). */
export function refusedError(op: PendingOp, cause: unknown): StateSyncError {
  const command = op.command?.name;
  return new StateSyncError(
    "UPDATE_REFUSED",
    `pending update ${op.seq}${command ? ` (${command})` : ""} was refused: ${cause instanceof Error ? cause.message : String(cause)}`,
    { cause, details: { id: op.seq, command } },
  );
}

/** A failed store write as the queue reports it (`QUEUE_FAILED`; `CLOSED` as it is). */
/**
 * The `CORRUPT_PENDING` report of the records a queue's load could not read (docs/offline.md,
 * "Damaged records"): which queue, how many, their seqs, and what the store says of each.
 */
export function damagedError(
  queue: { key: string; owner: string; origin: string },
  damaged: readonly DamagedPendingRecord[],
): StateSyncError {
  const seqs = damaged.map((d) => d.seq);
  const kept = damaged.filter((d) => d.keptAs !== undefined).length;
  const left = damaged.filter((d) => d.keptAs === undefined && d.leftInPlace === true).length;
  const deleted = damaged.length - kept - left;
  // What became of them, as the store says (before, every record not kept aside read "deleted",
  // also a file the store could not move, which stays: found with a new user's trial).
  const fates = [
    kept > 0 && `${kept} kept aside`,
    left > 0 && `${left} left in place (reported again at the next open)`,
    deleted > 0 && `${deleted} deleted`,
  ].filter(Boolean);
  return new StateSyncError(
    "CORRUPT_PENDING",
    `${damaged.length} pending update(s) of the queue ${queue.key} / ${queue.owner} could not be ` +
      `read and were dropped, never sent (seqs ${seqs.join(", ")}; ${fates.join(", ")}): ` +
      damaged[0]!.reason,
    { details: { ...queue, count: damaged.length, seqs, records: [...damaged] } },
  );
}

export function queueFailed(e: unknown): StateSyncError {
  if (e instanceof StateSyncError && (e.code === "QUEUE_FAILED" || e.code === "CLOSED")) return e;
  return new StateSyncError(
    "QUEUE_FAILED",
    `the pending update could not be stored: ${String(e)}`,
    {
      cause: e,
    },
  );
}

/** Not queued (no pending queue): held in memory, sent at once. One promise for all of them. */
const NOT_QUEUED = Promise.resolve<QueuedInfo>(Object.freeze({ id: undefined, durable: false }));

/** `promise` with its `queued` signal (see `QueuedPromise`); at once "not queued" by default. */
export function withQueued<T>(promise: Promise<T>, queued?: Promise<QueuedInfo>): QueuedPromise<T> {
  // Set as a plain property, and the default shared: Object.assign of a fresh object, a new
  // resolved promise and a handler per call cost 0.5-1 µs an update (micro-benchmark, Node 20).
  if (queued === undefined) queued = NOT_QUEUED;
  else queued.catch(() => undefined); // for those who ask; the outcome rejects too
  (promise as { queued?: Promise<QueuedInfo> }).queued = queued;
  return promise as QueuedPromise<T>;
}

/**
 * An update refused before it was queued or sent (invalid arguments, closed): both promises
 * reject. With a pending queue (`queueing`) the outcome's rejection is marked handled, as a queued
 * update's is (docs/offline.md): an app that awaits only `queued` (`await p.queued; … await p`)
 * learns of it there, and Node must not end the process for the other (a fresh-eyes trial).
 */
export function refusedAtCall(e: unknown, queueing: boolean): QueuedPromise<never> {
  const outcome = Promise.reject(e);
  if (queueing) outcome.catch(() => undefined);
  return withQueued(outcome, Promise.reject(e));
}

/** Queued updates one conditional append carries at most (as the writer's batches). */
const CHUNK = 64;

/**
 * What one push of `ops` (the queue, in order) sends from `head`: a command alone; for a
 * conditional update, it and the queued, valid conditional updates of the same origin right
 * after it, at most `max` (they share one entry, as the writer's batches do, and an entry carries
 * one origin: records of an earlier session and this session's updates never share one).
 */
export function chunkAt(ops: readonly PendingOp[], head: PendingOp, max = CHUNK): PendingOp[] {
  if (head.kind === "command") return [head];
  const chunk: PendingOp[] = [];
  for (let i = ops.indexOf(head); i < ops.length && chunk.length < max; i++) {
    const op = ops[i]!;
    if (op.kind !== "update" || op.state !== "queued" || op.invalid) break;
    if (op.origin !== head.origin) break;
    chunk.push(op);
  }
  return chunk;
}
