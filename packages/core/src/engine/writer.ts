import type { Immutable } from "immer";
import { abortError } from "../backoff.js";
import { entryContext } from "../apply.js";
import {
  CHECKED_COMMAND_FORMAT,
  type CommandEntry,
  type EntryOrigin,
  type UpdateEntry,
} from "../entry.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import type { RevisionedLog } from "../log.js";
import type { CommandMap } from "../model.js";
import type { UpdateResult } from "../synchronizer-types.js";
import type { Appender, AppendLimits } from "./appender.js";
import type { ContendingBatch, Contention } from "./contention.js";
import type { Upgrader } from "./upgrader.js";
import type { Opener } from "./opener.js";
import type { ParsedUpdateOptions } from "./options.js";
import type { Reader } from "./reader.js";
import type { RecipeRun, RecipeRunner } from "./recipes.js";
import type { Replica } from "./replica.js";
import type { StatusHub } from "./status.js";

/** Queued updates one conditional append may carry together. */
const MAX_BATCH = 64;

/** A conditional update waiting in the local queue. */
export interface QueuedUpdate<S> extends RecipeRun, ParsedUpdateOptions {
  /** Conditional appends made for it so far (and runs that found the log moved on). */
  attempts: number;
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

/** What one round of the write loop came to (Pravega's loop: a failed write is a value). */
type Attempt<S> =
  /** The log stored the batch's entry at `revision`; `state` is the state right after it. */
  | { kind: "committed"; revision: number; state: S; results: Map<QueuedUpdate<S>, unknown> }
  /** The recipes changed nothing and the log is still at `revision`. */
  | { kind: "unchanged"; revision: number; state: S; results: Map<QueuedUpdate<S>, unknown> }
  /** The log moved on (a conflict, or nothing to append but newer entries exist). */
  | { kind: "conflict" | "moved"; latest: number | undefined }
  /** Too large together: the first goes alone, the rest back to the queue. */
  | { kind: "split" }
  /** Every recipe failed alone (each caller has its error). */
  | { kind: "none" };

/** The ops of one batch and what the contention part tracks of them. */
class Batch<S> implements ContendingBatch {
  conflicts = 0;
  announced = false;
  turnsWaited = 0;
  constructor(public ops: QueuedUpdate<S>[]) {}

  /** Rejects the ops that may not go on (closed, stalled, aborted) and keeps the others. */
  filterUsable(status: StatusHub): boolean {
    this.ops = this.ops.filter((op) => {
      if (status.stopped) op.reject(status.endError());
      else if (op.applied?.()) return false;
      else if (op.signal?.aborted) op.reject(abortError(op.signal));
      else return true;
      return false;
    });
    return this.ops.length > 0;
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

/** What the writer needs of the other parts. */
export interface WriterParts<S, C extends CommandMap<S>> {
  readonly log: RevisionedLog;
  readonly clientId: string;
  readonly replica: Replica<S, C>;
  readonly reader: Reader<S, C>;
  readonly opener: Opener<S, C>;
  readonly appender: Appender;
  readonly contention: Contention<S, C>;
  readonly recipes: RecipeRunner<S, C>;
  readonly upgrader: Upgrader<S, C>;
  readonly status: StatusHub;
}

/**
 * The writer: the queue of conditional updates, the conditional-write loop (`commit`, after
 * Pravega's `updateState`), and unconditional appends.
 *
 * Invariants:
 * 1. One batch is written at a time, in queue order; queued updates share one entry (up to
 *    {@link MAX_BATCH}) unless together they are too large.
 * 2. A recipe runs on the replica's state at revision r and its entry is appended only if the
 *    log is still at r; a conflict catches up and runs it again. A recipe that changes nothing
 *    is checked against the log's latest revision instead (Pravega skips this check).
 * 3. A committed update resolves with the state right after its entry (what its recipes
 *    produced), whatever the replica consumed meanwhile.
 * 4. `close()` rejects what is queued and waits for the appends already sent.
 */
export class Writer<S, C extends CommandMap<S>> {
  private queue: QueuedUpdate<S>[] = [];
  private writing: Promise<void> | undefined;
  private paused = false;
  private readonly unconditionalInFlight = new Set<Promise<unknown>>();

  constructor(private readonly p: WriterParts<S, C>) {}

  /** Queues updates (several at once share a batch: the loop starts after the last). */
  enqueue(...ops: QueuedUpdate<S>[]): void {
    this.queue.push(...ops);
    this.kick();
  }

  /** Holds the queue (a compaction appends its snapshot entry meanwhile); waits for the batch. */
  async pause(pause: boolean): Promise<void> {
    this.paused = pause;
    if (pause) await this.writing;
    else this.kick();
  }

  /** Rejects what is queued with `error` and waits for every append already sent. */
  async close(error: StateSyncError): Promise<void> {
    for (const op of this.queue.splice(0)) op.reject(error);
    await this.writing?.catch(() => undefined);
    await Promise.allSettled([...this.unconditionalInFlight]);
  }

  private kick(): void {
    // (an empty queue would settle the loop before `writing` is even assigned)
    if (this.writing || this.paused || this.queue.length === 0) return;
    this.writing = (async () => {
      try {
        while (this.queue.length > 0 && !this.paused) {
          await this.commit(new Batch(this.queue.splice(0, MAX_BATCH)));
        }
      } finally {
        this.writing = undefined;
      }
    })();
  }

  /** The conditional-write loop: one round per attempt until the batch commits or fails. */
  private async commit(batch: Batch<S>): Promise<void> {
    for (let round = 0; batch.filterUsable(this.p.status); round++) {
      let outcome: Attempt<S>;
      try {
        outcome = await this.attempt(batch);
      } catch (e) {
        this.p.status.fatal(e);
        return batch.rejectAll(e);
      }
      switch (outcome.kind) {
        case "none":
          return;
        case "committed":
        case "unchanged":
          for (const op of batch.ops) {
            op.resolve({
              revision: outcome.revision,
              state: outcome.state as Immutable<S>,
              result: outcome.results.get(op),
              attempts: op.attempts + (outcome.kind === "unchanged" ? 1 : 0),
            });
          }
          return;
        case "split":
          this.queue.unshift(...batch.ops.splice(1));
          continue;
        case "conflict":
        case "moved":
          if (outcome.kind === "conflict") batch.conflicts += 1;
          batch.filterAttemptsLeft(
            outcome.kind === "conflict" ? "the update conflicted" : "the log moved on",
          );
          try {
            await this.p.reader.catchUp(outcome.latest);
            if (outcome.kind === "conflict") await this.p.contention.afterConflict(batch, round);
          } catch (e) {
            return batch.rejectAll(e);
          }
      }
    }
  }

  /** One round: run the recipes on the current state and append their entry conditionally. */
  private async attempt(batch: Batch<S>): Promise<Attempt<S>> {
    if (!this.p.replica.anchored) {
      const { timeoutMs, signal } = limitsOf(batch.ops);
      await this.p.opener.anchor(Date.now() + timeoutMs, signal);
    }
    if (this.p.replica.legacy) await this.p.upgrader.ensure();
    if (this.p.contention.mayWait) await this.p.contention.beforeAttempt(batch);
    const base = this.p.replica.revision;
    const state = this.p.replica.state as S;
    const ts = Date.now();
    const seed = nextSeed();
    const ctx = entryContext(base, ts, seed, this.p.clientId);
    const run = this.p.recipes.run(batch.ops, state, ctx);
    batch.ops = batch.ops.filter((op) => {
      if (!run.failures.has(op)) return true;
      op.reject(run.failures.get(op));
      return false;
    });
    if (batch.ops.length === 0) return { kind: "none" };
    if (run.patches.length === 0) {
      // Nothing to append, so no conditional append checks that the recipes read the latest
      // state: ask the log (invariant 2).
      const latest = (await this.p.log.info()).latestRevision;
      if (latest <= this.p.replica.revision) {
        return { kind: "unchanged", revision: base, state, results: run.results };
      }
      for (const op of batch.ops) op.attempts += 1;
      return { kind: "moved", latest };
    }
    const origin = originOf(batch.ops);
    const entry: UpdateEntry = {
      v: origin ? 2 : 1,
      kind: "update",
      base,
      ts,
      seed,
      client: this.p.clientId,
      patches: run.patches,
      ...(run.commands.length > 0 ? { commands: run.commands } : {}),
      ...(origin ? { origin } : {}),
    };
    let prepared;
    try {
      prepared = await this.p.appender.prepare(entry, "the update");
    } catch (e) {
      if (isStateSyncError(e, "PAYLOAD_TOO_LARGE") && batch.ops.length > 1)
        return { kind: "split" };
      throw e;
    }
    for (const op of batch.ops) op.attempts += 1;
    // Read back before its acknowledgement, the entry is adopted with this state (no replay).
    const own = { ...prepared, produced: { base, state: run.state } };
    const outcome = await this.p.appender.appendConditional(own, base, limitsOf(batch.ops));
    if (outcome.kind === "conflict") return outcome;
    // Committed: whatever happens to the replica now (closed, stalled, a read that fails), the
    // caller learns that its update is in the log, at this revision, with this state (a CLOSED
    // here would read as "not stored", and a retry would apply the update twice).
    const stored = outcome.entry;
    if (!this.p.replica.adopt(stored, entry, run.state) && !this.p.status.stopped) {
      // The replica moved past `base` meanwhile (it read its own entry back first): fine, unless
      // it has not reached the entry yet.
      if (this.p.replica.revision < stored.revision) {
        await this.p.reader.catchUp(stored.revision).catch(() => undefined);
      }
    }
    return { kind: "committed", revision: stored.revision, state: run.state, results: run.results };
  }

  /** Appends a command at the tail (see `StateSynchronizer.updateUnconditionally`). */
  async unconditional(
    name: string,
    args: unknown,
    options: ParsedUpdateOptions,
    origin?: EntryOrigin,
  ): Promise<{ readonly revision: number }> {
    if (options.signal?.aborted) throw abortError(options.signal);
    if (!this.p.replica.anchored) {
      await this.p.opener.anchor(Date.now() + options.outcomeTimeoutMs, options.signal);
    }
    if (this.p.replica.legacy) await this.p.upgrader.ensure();
    if (this.p.contention.mayWait) await this.p.contention.deferToIntents();
    const entry: CommandEntry = {
      // Format 3: every replica checks the command's result (docs/format.md); it carries `origin`.
      v: CHECKED_COMMAND_FORMAT,
      kind: "command",
      ts: Date.now(),
      seed: nextSeed(),
      client: this.p.clientId,
      name,
      args,
      mv: this.p.upgrader.version,
      ...(origin ? { origin } : {}),
    };
    const prepared = await this.p.appender.prepare(entry, "the command");
    const append = this.p.appender.appendUnconditional(prepared, {
      timeoutMs: options.outcomeTimeoutMs,
      signal: options.signal,
    });
    this.unconditionalInFlight.add(append);
    let revision: number;
    try {
      revision = (await append).revision;
    } catch (e) {
      this.p.status.fatal(e);
      throw e;
    } finally {
      this.unconditionalInFlight.delete(append);
    }
    // Stored. Its outcome is what every replica does with it: wait until this one consumed it
    // (a replica that stops or closes first leaves it unknown: the caller learns it is stored).
    if (this.p.replica.revision < revision) {
      this.p.reader.noteStored(revision);
      await this.p.reader.catchUp(revision).catch(() => undefined);
    }
    const failure = this.p.replica.commandFailure(revision);
    if (failure) throw commandFailed(failure, revision);
    return { revision };
  }
}

/**
 * What the caller of `updateUnconditionally` gets when its command entry, stored at `revision`,
 * is a no-op on every replica (`failure`, as the replica reported it): `COMMAND_FAILED` with
 * `details.committed: true` (the entry is in the log; sending the command again appends another).
 */
function commandFailed(failure: StateSyncError, revision: number): StateSyncError {
  return new StateSyncError("COMMAND_FAILED", failure.message, {
    cause: failure.cause ?? failure,
    details: { ...failure.details, revision, committed: true },
  });
}

/** The highest identity of the batch's queued updates (they share one origin), if any. */
function originOf<S>(ops: readonly QueuedUpdate<S>[]): EntryOrigin | undefined {
  let origin: EntryOrigin | undefined;
  for (const op of ops) if (op.origin && (!origin || op.origin[1] > origin[1])) origin = op.origin;
  return origin;
}

/** One timeout for the batch (the shortest), and a signal only when it is one caller's. */
function limitsOf<S>(ops: readonly QueuedUpdate<S>[]): AppendLimits {
  return {
    timeoutMs: Math.min(...ops.map((o) => o.outcomeTimeoutMs)),
    signal: ops.length === 1 ? ops[0]!.signal : undefined,
  };
}

const seedPool = new Uint32Array(256);
let seedNext = seedPool.length;
/** A random 32-bit seed from the platform's CSPRNG, drawn 256 at a time (one draw costs ~1 µs). */
function nextSeed(): number {
  if (seedNext === seedPool.length) {
    crypto.getRandomValues(seedPool);
    seedNext = 0;
  }
  return seedPool[seedNext++]!;
}
