import type { Immutable } from "immer";
import { entryContext } from "../apply.js";
import type { EntryOrigin } from "../entry.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import type { RevisionedLog } from "../log.js";
import type { CommandMap } from "../model.js";
import type { Appender } from "./appender.js";
import type { Contention } from "./contention.js";
import type { Upgrader } from "./upgrader.js";
import type { Opener } from "./opener.js";
import type { ParsedUpdateOptions } from "./options.js";
import type { Reader } from "./reader.js";
import type { RecipeRunner } from "./recipes.js";
import type { Replica } from "./replica.js";
import type { StatusHub } from "./status.js";
import type { UnconditionalResult } from "../synchronizer-types.js";
import { UpdateQueue } from "./update-queue.js";
import { UnconditionalWriter } from "./unconditional-writer.js";
import { answered, ENDED, waitEnded, within } from "./wait-limits.js";
import { Batch, updateEntry, type QueuedUpdate } from "./write-batch.js";
import { nextSeed } from "../prng.js";

/** Queued updates one conditional append may carry together. */
const MAX_BATCH = 64;

/** What one round of the write loop came to (Pravega's loop: a failed write is a value). */
type Attempt<S> =
  /** The log stored the batch's entry at `revision`; `state` is the state right after it. */
  | { kind: "committed"; revision: number; state: S; results: Map<QueuedUpdate<S>, unknown> }
  /** The recipes changed nothing and the log is still at `revision`. */
  | { kind: "unchanged"; revision: number; state: S; results: Map<QueuedUpdate<S>, unknown> }
  /** The log moved on (a conflict, or nothing to append but newer entries exist). */
  | { kind: "conflict" | "moved"; latest: number | undefined; base?: number }
  /** Too large together: the first goes alone, the rest back to the queue. */
  | { kind: "split" }
  /** Every recipe failed alone (each caller has its error). */
  | { kind: "none" }
  /** A wait before sending ended at an update's limits (the next round rejects that one). */
  | { kind: "interrupted" };

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
  /** Whether commands in flight together share appends (the `groupCommands` option). */
  readonly groupCommands: boolean;
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
 * 3. A committed update resolves with the state right after its entry (what its recipes made).
 * 4. `close()` rejects the queued updates, sends the waiting commands, waits for every append.
 * 5. Every wait before an update is sent (queue, log, other writers) ends at its limits: its
 *    `signal`, its call + `outcomeTimeoutMs`, `close()` (`wait-limits.ts`; nothing appended).
 * 6. A conditional batch that lost a race is not overtaken by this replica's own unconditional
 *    commands: those called after the conflict wait until the batch is decided (else a command
 *    woken by the same entry took the batch's base every time: `RETRY_LIMIT`, stop 26).
 * 7. An unconditional command resolves once applied here, or once stored when its limits end,
 *    the replica stops or passes over its entry first (`applied: false`).
 * 8. A conditional attempt waits for this replica's commands already submitted (not those held
 *    by 6): appended before them, it conflicted with them every time (a new user's trial).
 */
export class Writer<S, C extends CommandMap<S>> {
  private readonly queue: UpdateQueue<S>;
  private writing: Promise<void> | undefined;
  private paused = false;
  /** Set while a conditional batch that conflicted tries again (invariant 6). */
  private retrying: { readonly decided: Promise<void>; readonly release: () => void } | undefined;
  private readonly commands: UnconditionalWriter<S, C>;

  constructor(private readonly p: WriterParts<S, C>) {
    this.queue = new UpdateQueue(p.status);
    this.commands = new UnconditionalWriter(p, () => this.retrying?.decided);
  }

  /**
   * Queues updates (several at once share a batch: the loop starts after the last). Each one's
   * deadline starts now: waiting in the queue counts towards its `outcomeTimeoutMs`.
   */
  enqueue(...ops: QueuedUpdate<S>[]): void {
    this.queue.add(ops);
    this.kick();
    this.queue.arm(); // for what still waits behind the batch being written
  }

  /** Holds the queue (a compaction appends its snapshot entry meanwhile); waits for the batch. */
  async pause(pause: boolean): Promise<void> {
    this.paused = pause;
    if (pause) await this.writing;
    else this.kick();
  }

  /** Rejects what is queued with `error` and waits for every append already sent. */
  async close(error: StateSyncError): Promise<void> {
    this.queue.rejectAll(error);
    const flushed = this.commands.flush();
    await this.writing?.catch(() => undefined);
    await flushed;
    await this.commands.settled();
  }

  private kick(): void {
    // (an empty queue would settle the loop before `writing` is even assigned)
    if (this.writing || this.paused || this.queue.length === 0) return;
    this.writing = (async () => {
      try {
        while (this.queue.length > 0 && !this.paused) {
          try {
            await this.commit(new Batch(this.queue.take(MAX_BATCH)));
          } finally {
            this.retrying?.release(); // decided: the commands held behind it go (invariant 6)
            this.retrying = undefined;
          }
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
          this.queue.add(batch.ops.splice(1), true);
          continue;
        case "interrupted":
          continue; // the next round's filterUsable rejects what ended the wait
        case "conflict":
        case "moved": {
          if (outcome.kind === "conflict") {
            batch.conflicts += 1;
            if (!this.retrying) {
              let release: () => void = () => undefined;
              const decided = new Promise<void>((r) => (release = r));
              this.retrying = { decided, release };
            }
          }
          batch.filterAttemptsLeft(
            outcome.kind === "conflict" ? "the update conflicted" : "the log moved on",
          );
          const limits = batch.limits(this.p.status.signal);
          try {
            // The log's latest is before this append's base, which it had stored: a purged key,
            // or a log that went back (not the replica's revision: it may have read on since).
            const { latest, base } = outcome;
            if (latest !== undefined && base !== undefined && latest < base) {
              await this.p.opener.logBehind(latest);
            }
            const caughtUp = () => this.p.reader.catchUp(outcome.latest);
            if ((await answered(caughtUp, limits, this.p.status)) === ENDED) continue;
            if (outcome.kind === "conflict") {
              await this.p.contention.afterConflict(batch, round, limits);
            }
          } catch (e) {
            return batch.rejectAll(e);
          } finally {
            limits.dispose();
          }
        }
      }
    }
  }

  /**
   * The waits before an attempt: standing on the log (`anchor`), an upgrade of the log, other
   * writers (intents, turns). False when the batch's limits ended one of them (an op aborted,
   * past its deadline, or the replica closed): nothing was sent, the next round says which.
   */
  private async beforeSending(batch: Batch<S>): Promise<boolean> {
    const limits = batch.limits(this.p.status.signal);
    try {
      if (!this.p.opener.standsOnLog) await this.p.opener.anchor(limits.deadline, limits.signal);
      if (this.p.replica.legacy && (await within(this.p.upgrader.ensure(), limits)) === ENDED) {
        return false;
      }
      if (this.p.contention.mayWait) await this.p.contention.beforeAttempt(batch, limits);
      return !limits.signal.aborted && Date.now() < limits.deadline;
    } catch (e) {
      if (waitEnded(e, limits)) return false;
      throw e;
    } finally {
      limits.dispose();
    }
  }

  /**
   * Waits until this replica's commands already submitted are applied here (or failed): stored
   * before the batch, they would make its append conflict (invariant 8). False when the batch's
   * limits ended the wait.
   */
  private async afterOwnCommands(batch: Batch<S>): Promise<boolean> {
    const limits = batch.limits(this.p.status.signal);
    const sent = Promise.allSettled([...this.commands.inFlight]);
    return within(sent, limits)
      .then((r) => r !== ENDED)
      .finally(() => limits.dispose());
  }

  /**
   * One round: the waits before sending, then `run`; what `Batch.setAside` took out is refused
   * when the round stood on the log's tail, and runs again otherwise.
   */
  private async attempt(batch: Batch<S>): Promise<Attempt<S>> {
    const waits = !this.p.opener.standsOnLog || this.p.replica.legacy || this.p.contention.mayWait;
    if (waits && !(await this.beforeSending(batch))) return { kind: "interrupted" };
    if (this.commands.inFlight.size > 0 && !(await this.afterOwnCommands(batch))) {
      return { kind: "interrupted" };
    }
    try {
      const outcome = await this.run(batch);
      batch.settleAside(["committed", "unchanged", "none"].includes(outcome.kind));
      return outcome;
    } catch (e) {
      batch.settleAside(true); // the batch ends: each set-aside update fails with its own error
      throw e;
    }
  }

  /** Runs the recipes on the current state and appends their entry conditionally. */
  private async run(batch: Batch<S>): Promise<Attempt<S>> {
    const base = this.p.replica.revision;
    const state = this.p.replica.state as S;
    const ts = Date.now();
    const seed = nextSeed();
    const ctx = entryContext(base, ts, seed, this.p.clientId);
    const run = this.p.recipes.run(batch.ops, state, ctx);
    batch.setAside(run.failures); // refused once the round is known to stand on the log's tail
    if (batch.ops.length === 0) return { kind: "none" };
    if (run.patches.length === 0) {
      // Nothing to append, so no append checks that the recipes read the latest: ask the log (2).
      const limits = batch.limits(this.p.status.signal);
      const info = await answered(() => this.p.log.info(), limits, this.p.status).finally(() =>
        limits.dispose(),
      );
      if (info === ENDED) return { kind: "interrupted" };
      const latest = info.latestRevision;
      if (latest <= this.p.replica.revision) {
        return { kind: "unchanged", revision: base, state, results: run.results };
      }
      for (const op of batch.ops) op.attempts += 1;
      return { kind: "moved", latest };
    }
    const entry = updateEntry(batch.ops, { base, ts, seed, client: this.p.clientId }, run);
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
    const own = {
      data: prepared.data,
      decoded: prepared.decoded,
      produced: { base, state: run.state },
    };
    const outcome = await batch.append(this.p.appender, own, base, this.p.status);
    if (outcome === "interrupted" || outcome === "none") return { kind: outcome };
    if (outcome.kind === "conflict") return { ...outcome, base };
    // Committed: whatever happens to the replica now (closed, stalled, a failed read), the caller
    // learns it is in the log with this state (a CLOSED would read "not stored": applied twice).
    const stored = outcome.entry;
    if (!this.p.replica.adopt(stored, entry, run.state) && !this.p.status.stopped) {
      // The replica moved past `base` meanwhile (it read its own entry back first): fine, unless
      // it has not reached the entry yet. The outcome is known: an abort only ends the wait.
      if (this.p.replica.revision < stored.revision) {
        const limits = batch.limits(this.p.status.signal);
        await within(this.p.reader.catchUp(stored.revision), { ...limits, deadline: Infinity })
          .catch(() => undefined)
          .finally(() => limits.dispose());
      }
    }
    return { kind: "committed", revision: stored.revision, state: run.state, results: run.results };
  }

  /**
   * Appends a command at the tail (see `StateSynchronizer.updateUnconditionally`), behind this
   * replica's conditional batch that lost a race (invariant 6): `UnconditionalWriter`.
   */
  unconditional(
    name: string,
    args: unknown,
    options: ParsedUpdateOptions,
    origin?: EntryOrigin,
    context?: { readonly timestamp: number; readonly seed: number },
  ): Promise<UnconditionalResult> {
    return this.commands.unconditional(name, args, options, origin, context);
  }
}
