import type { EntryOrigin } from "../entry.js";
import { StateSyncError } from "../errors.js";
import type { UpdateResult } from "../synchronizer-types.js";
import type { AppendLimits } from "./appender.js";
import type { ContendingBatch } from "./contention.js";
import type { ParsedUpdateOptions } from "./options.js";
import type { RecipeRun } from "./recipes.js";
import type { StatusHub } from "./status.js";
import { unsent, waitLimits, type UpdateLimits, type WaitLimits } from "./wait-limits.js";

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
  constructor(public ops: QueuedUpdate<S>[]) {}

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
   * only when it is one caller's.
   */
  appendLimits(): AppendLimits {
    return {
      timeoutMs: Math.min(...this.ops.map((o) => o.outcomeTimeoutMs)),
      deadline: Math.min(...this.ops.map((o) => o.deadline ?? Infinity)),
      signal: this.ops.length === 1 ? this.ops[0]!.signal : undefined,
    };
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
