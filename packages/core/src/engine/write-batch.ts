import type { EntryOrigin, StoredPatch, UpdateEntry } from "../entry.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import type { UpdateResult } from "../synchronizer-types.js";
import type { AppendLimits, Appender, ConditionalOutcome } from "./appender.js";
import type { ContendingBatch } from "./contention.js";
import type { ParsedUpdateOptions } from "./options.js";
import type { RecipeRun } from "./recipes.js";
import type { StatusHub } from "./status.js";
import { unsent, waitLimits, type UpdateLimits, type WaitLimits } from "./wait-limits.js";

/** A signal that never aborts (the batch's combined signal needs a `closing` one). */
const NEVER = new AbortController().signal;

/** A conditional update waiting in the local queue. */
export interface QueuedUpdate<S> extends RecipeRun, ParsedUpdateOptions {
  /** Conditional appends made for it so far (and runs that found the log moved on). */
  attempts: number;
  /** When its waits and re-sends end, ms since the epoch: set when it is queued. */
  deadline?: number;
  /**
   * A queued update's identity (`pending/`): the entry carrying it is written as format 2 with
   * the batch's highest `origin`. With `applied`, which tells when the replica already holds it
   * (a re-send whose first append landed): the writer then drops it unsettled, its owner settles.
   */
  readonly origin?: EntryOrigin | undefined;
  applied?(): boolean;
  resolve(result: UpdateResult<S, unknown>): void;
  reject(error: unknown): void;
}

/** A queued update's own limits (see `wait-limits.ts`). */
export function limitsOfUpdate<S>(op: QueuedUpdate<S>): UpdateLimits {
  return {
    signal: op.signal,
    outcomeTimeoutMs: op.outcomeTimeoutMs,
    deadline: op.deadline ?? Infinity,
  };
}

/** The ops of one batch (written as one entry) and what the contention part tracks of them. */
export class Batch<S> implements ContendingBatch {
  conflicts = 0;
  announced = false;
  turnsWaited = 0;
  heldMs = 0;
  /** The ops as they were before {@link setAside}, and those it set aside with their errors. */
  private aside: { all: QueuedUpdate<S>[]; failed: Map<QueuedUpdate<S>, unknown> } | undefined;
  constructor(public ops: QueuedUpdate<S>[]) {}

  /**
   * Takes the ops whose recipes failed this round out of its entry. Whether they are refused is
   * known once the round shows it ran on the log's tail ({@link settleAside}): a recipe that
   * failed on a state behind the log (another writer's entry not read yet) runs again in the
   * next round, with the others (before, it was refused at once while the rest of its batch
   * conflicted and then committed at the tail: a stop 35 re-check).
   */
  setAside(failures: ReadonlyMap<QueuedUpdate<S>, unknown>): void {
    if (failures.size === 0) return;
    this.aside = { all: this.ops, failed: new Map(failures) };
    this.ops = this.ops.filter((op) => !failures.has(op));
  }

  /** Refuses what {@link setAside} took out when the round ran on the log's tail, else restores it. */
  settleAside(atTail: boolean): void {
    const aside = this.aside;
    if (aside === undefined) return;
    this.aside = undefined;
    if (atTail) for (const [op, error] of aside.failed) op.reject(error);
    else {
      const kept = new Set(this.ops);
      this.ops = aside.all.filter((op) => aside.failed.has(op) || kept.has(op));
    }
  }

  /**
   * Rejects the ops that may not go on (closed, stalled, aborted, past their deadline: see
   * `unsent`) and keeps the others. Between rounds nothing of the batch is in the log.
   */
  filterUsable(status: StatusHub): boolean {
    this.ops = this.ops.filter((op) => {
      if (!status.stopped && op.applied?.()) return false;
      const error = unsent(status, limitsOfUpdate(op));
      if (!error) return true;
      op.reject(error);
      return false;
    });
    return this.ops.length > 0;
  }

  /** What ends this batch's waits: any op's signal, the earliest deadline, `closing`. */
  limits(closing: AbortSignal): WaitLimits & { dispose(): void } {
    return waitLimits(this.ops.map(limitsOfUpdate), closing);
  }

  /**
   * One timeout and deadline for the batch's append (the shortest, the earliest), and a signal
   * that aborts with any op's. What follows when one op's limits end the append:
   * {@link afterFailedAppend}. (Before, the batch had a signal only when it was one caller's,
   * and every op failed at the first op's deadline with its wait: a fresh-eyes trial.)
   */
  appendLimits(): AppendLimits & { dispose(): void } {
    const limits = this.ops.map(limitsOfUpdate);
    const signed = limits.filter((l) => l.signal !== undefined);
    const any = signed.length > 1 ? waitLimits(signed, NEVER) : undefined;
    return {
      timeoutMs: Math.min(...this.ops.map((o) => o.outcomeTimeoutMs)),
      deadline: Math.min(...limits.map((l) => l.deadline)),
      signal: any ? any.signal : signed[0]?.signal,
      dispose: () => any?.dispose(),
    };
  }

  /**
   * Appends the batch's entry `prepared` conditionally on `base` with {@link appendLimits}:
   * its outcome, or, when one op's limits ended it, `"interrupted"` (a new round goes on without
   * that op) or `"none"` (every op rejected): see {@link afterFailedAppend}.
   */
  async append(
    appender: Appender,
    prepared: Parameters<Appender["appendConditional"]>[0],
    base: number,
    status: StatusHub,
  ): Promise<ConditionalOutcome | "interrupted" | "none"> {
    let sentAs: string | undefined;
    for (;;) {
      const limits = this.appendLimits();
      try {
        return await appender.appendConditional(prepared, base, limits, sentAs);
      } catch (e) {
        const next = this.afterFailedAppend(e, status, limits);
        if (next === "rethrow") throw e;
        if (next === "resume") {
          sentAs = (e as StateSyncError).details.messageId as string;
          continue;
        }
        return next === "retry" ? "interrupted" : "none";
      } finally {
        limits.dispose();
      }
    }
  }

  /**
   * After the batch's append failed with `error`, when some op's own limits (its signal, its
   * deadline) had ended. When nothing was sent (`ABORTED`, `notSent`), those ops are rejected
   * (with `error` when its `limits` were the op's own: it names the attempts and the wait; else
   * with their own) and
   * `"retry"`: a new round goes on with the others (`"rejected"` when none is left). When
   * the entry may be stored (`UNKNOWN_OUTCOME`): those ops get `error`, and the others'
   * append goes on as its re-send (`"resume"`: same bytes, same message id, same base); without
   * a message id to re-send under, they get an `UNKNOWN_OUTCOME` that says their entry was
   * shared (it cannot be re-computed without the risk of applying them twice). `"rethrow"`
   * otherwise, and when no op's limits ended: the error is the whole batch's (as before).
   */
  afterFailedAppend(
    error: unknown,
    status: StatusHub,
    limits: AppendLimits,
  ): "retry" | "rejected" | "rethrow" | "resume" {
    if (status.stopped || !isStateSyncError(error)) return "rethrow";
    const ended = new Map(this.ops.map((op) => [op, unsent(status, limitsOfUpdate(op))]));
    for (const [op, why] of ended) if (!why) ended.delete(op);
    if (ended.size === 0) return "rethrow";
    if (error.code === "ABORTED" || error.details.notSent === true) {
      // The append's error names its attempts and wait: the update's own when its deadline was
      // the append's (a trial saw another update's wait on one that ended at the same moment).
      for (const [op, why] of ended) {
        const own =
          why!.code === "UNAVAILABLE" &&
          (op.deadline ?? Infinity) === limits.deadline &&
          op.outcomeTimeoutMs === limits.timeoutMs;
        op.reject(own && error.code === "UNAVAILABLE" ? error : why);
      }
      this.ops = this.ops.filter((op) => !ended.has(op));
      return this.ops.length > 0 ? "retry" : "rejected";
    }
    if (error.code !== "UNKNOWN_OUTCOME") return "rethrow";
    // The others' entry is still resolvable: the same bytes re-sent under the same message id
    // on the same base land at most once, and a conflict is looked up (before, every update of
    // the entry failed UNKNOWN_OUTCOME when one caller aborted, though the entry was stored:
    // a trial saw 19 of 20 updates so fail on a healthy server for one aborted).
    const messageId = error.details.messageId;
    if (typeof messageId === "string" && this.ops.some((op) => !ended.has(op))) {
      for (const op of ended.keys()) op.reject(error);
      this.ops = this.ops.filter((op) => !ended.has(op));
      return "resume";
    }
    for (const op of this.ops) {
      op.reject(
        ended.has(op)
          ? error
          : new StateSyncError(
              "UNKNOWN_OUTCOME",
              `the append may or may not be stored: its entry also held an update that was aborted or timed out while the entry's outcome was unknown (${error.message})`,
              { cause: error, details: error.details },
            ),
      );
    }
    this.ops = [];
    return "rejected";
  }

  /** Rejects the ops out of attempts with `RETRY_LIMIT` ("<what> <n> times"). */
  filterAttemptsLeft(what: string): void {
    this.ops = this.ops.filter((op) => {
      if (op.attempts < op.maxAttempts) return true;
      op.reject(
        new StateSyncError("RETRY_LIMIT", `${what} ${op.attempts} times`, {
          details: { attempts: op.attempts },
        }),
      );
      return false;
    });
  }

  rejectAll(error: unknown): void {
    for (const op of this.ops) op.reject(error);
  }
}

/** The highest identity of the batch's queued updates (they share one origin), if any. */
export function originOf<S>(ops: readonly QueuedUpdate<S>[]): EntryOrigin | undefined {
  let origin: EntryOrigin | undefined;
  for (const op of ops) if (op.origin && (!origin || op.origin[1] > origin[1])) origin = op.origin;
  return origin;
}

/**
 * The update entry of a batch's recipes (`patches`, named `commands`) at `base`, format 2 with
 * the batch's highest origin when it carries queued updates (`pending/`), else format 1.
 */
export function updateEntry<S>(
  ops: readonly QueuedUpdate<S>[],
  head: Pick<UpdateEntry, "base" | "ts" | "seed" | "client">,
  run: { readonly patches: StoredPatch[]; readonly commands: UpdateEntry["commands"] & object },
): UpdateEntry {
  const origin = originOf(ops);
  return {
    v: origin ? 2 : 1,
    kind: "update",
    ...head,
    patches: run.patches,
    ...(run.commands.length > 0 ? { commands: run.commands } : {}),
    ...(origin ? { origin } : {}),
  };
}
