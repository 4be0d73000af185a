import type { Immutable } from "immer";
import { pendingContext } from "../apply.js";
import { StateSyncError } from "../errors.js";
import { pendingSeed } from "../prng.js";
import type { CommandMap } from "../model.js";
import type { UpdateResult } from "../synchronizer-types.js";
import { DEFAULT_OUTCOME_TIMEOUT_MS } from "../engine/options.js";
import type { QueuedUpdate } from "../engine/write-batch.js";
import type { OfflineQueueParts } from "./queue-parts.js";
import { refuses, type PendingOp, type SendOutcome } from "./pending-op.js";

/** How often an update refused on a state behind the log is run again at its tail. */
const MAX_RERUNS = 3;

/**
 * Hands chunks of pending updates to the writer and says what became of each (the push loop of
 * `OfflineQueue` decides what follows). A conditional chunk goes to the writer's queue in one
 * call, so it shares one entry; each update carries its `(origin, seq)`, has no outcome timeout
 * of its own and no attempt limit, and is dropped by the writer when the confirmed state already
 * holds it. An unconditional command goes alone.
 */
export class ChunkSender<S, C extends CommandMap<S>> {
  constructor(private readonly p: OfflineQueueParts<S, C>) {}

  /**
   * Sends `ready` (queued ops of one chunk) and sorts what became of them: committed (with the
   * result), refused (with why), or neither (`retry`: they are queued again). A refusal is
   * definite (the update was left out of every attempt); a seq below an applied one of its batch
   * then counts as applied in the table, but it was not.
   */
  async push(ready: readonly PendingOp[]): Promise<{
    committed: Array<[PendingOp, unknown]>;
    refused: Array<[PendingOp, unknown]>;
    retry: boolean;
  }> {
    for (const op of ready) op.state = "sending";
    const outcomes = await this.send(ready);
    const committed: Array<[PendingOp, unknown]> = [];
    const refused: Array<[PendingOp, unknown]> = [];
    let retry = false;
    ready.forEach((op, i) => {
      const outcome = outcomes[i]!;
      if (op.state === "sending") op.state = "queued";
      if (outcome.ok) committed.push([op, outcome.value]);
      else if (refuses(outcome.error)) refused.push([op, outcome.error]);
      else if (this.isApplied(op)) committed.push([op, this.confirmedResult(op)]);
      else retry = true;
    });
    if (refused.length === 0) return { committed, refused, retry };
    // A refusal is final: one made on a state behind the log (an update this replica has not
    // read yet made it fail: another replica of the page pushed it, a trial's drained tab) is
    // run again at the log's tail, a few times at most, and refused only there.
    const before = this.p.replica.revision;
    try {
      await this.p.reader.catchUp();
    } catch {
      return { committed, refused: [], retry: true }; // cannot tell now: queued, tried again
    }
    if (this.p.replica.revision === before) return { committed, refused, retry };
    // Final too: one whose identity the table of applied origins covers already (a later update
    // of its queue committed: in this batch, so it was refused on the log's tail). Queued again,
    // it would be taken for committed, never having been (a trial: tabs' edits resolved as
    // committed while no entry held them).
    const final = refused.filter(
      ([op]) => this.isApplied(op) || (this.rerun.get(op) ?? 0) >= MAX_RERUNS,
    );
    for (const [op] of refused) this.rerun.set(op, (this.rerun.get(op) ?? 0) + 1);
    return { committed, refused: final, retry };
  }

  /** How many times each op refused on a state behind the log was run again. */
  private readonly rerun = new WeakMap<PendingOp, number>();

  /**
   * Hands a chunk to the writer; each outcome is the writer's answer, or "applied already". The
   * ops of a chunk share one origin (`chunkAt`).
   */
  send(chunk: readonly PendingOp[]): Promise<SendOutcome[]> {
    if (chunk[0]!.kind === "command") {
      const op = chunk[0]!;
      op.attempts += 1;
      const options = {
        maxAttempts: 1,
        outcomeTimeoutMs: DEFAULT_OUTCOME_TIMEOUT_MS,
        signal: undefined,
      };
      const origin: [string, number] = [op.origin, op.seq];
      // Its context is fixed by its identity: the optimistic view showed what it commits.
      const context = { timestamp: op.queuedAt, seed: pendingSeed(op.origin, op.seq) };
      const { name } = op.command!;
      return this.p.writer.unconditional(name, op.args, options, origin, context).then(
        ({ revision }) =>
          this.unconditionalResult(op, revision).then(
            (value) => [{ ok: true, value }],
            (error: unknown) => [{ ok: false, error }],
          ),
        (error: unknown) => [{ ok: false, error }],
      );
    }
    const outcomes: Array<Promise<SendOutcome>> = [];
    const queued: QueuedUpdate<S>[] = [];
    for (const op of chunk) {
      outcomes.push(
        new Promise<SendOutcome>((settle) => queued.push(this.queuedUpdate(op, settle))),
      );
    }
    this.p.writer.enqueue(...queued); // one call: the chunk shares the writer's batch
    return Promise.all(outcomes);
  }

  /** A pending conditional update as the writer's queue takes it. */
  private queuedUpdate(op: PendingOp, settle: (outcome: SendOutcome) => void): QueuedUpdate<S> {
    let attempts = 0;
    return {
      run: op.run,
      command: op.command,
      // The context the optimistic view ran it with, in every attempt (not the batch's).
      context: (batch) => pendingContext(batch.revision, op, batch.clientId),
      maxAttempts: Number.POSITIVE_INFINITY,
      outcomeTimeoutMs: DEFAULT_OUTCOME_TIMEOUT_MS,
      signal: undefined,
      get attempts() {
        return attempts;
      },
      set attempts(n: number) {
        op.attempts += n - attempts;
        attempts = n;
      },
      origin: [op.origin, op.seq],
      applied: () => {
        if (!this.isApplied(op)) return false;
        settle({ ok: true, value: this.confirmedResult(op) });
        return true;
      },
      resolve: (value) => settle({ ok: true, value }),
      reject: (error) => settle({ ok: false, error }),
    };
  }

  /**
   * The revision that counted for an unconditional command: a re-send may have stored a second
   * copy, which every replica skips; the table of applied origins names the first. Rejects with
   * the catch-up's error when this replica could not read up to the entry and the table does not
   * hold it: stored is not applied (a command of an older model stored after the log switched is
   * skipped by every replica, `OUTDATED_COMMAND`), so the record stays queued for the replica,
   * or the upgraded app, that can tell (a trial: such a record was dropped in silence).
   */
  private async unconditionalResult(op: PendingOp, revision: number) {
    // The replica consumes the entry before the update leaves the queue, so the view never
    // loses it in between (the follower's, or a read when it does not follow).
    try {
      await this.p.reader.catchUp(revision);
    } catch (error) {
      if (!this.isApplied(op)) throw error;
    }
    // A replica that stopped (a stall, `close()`) ends its catch-up short, without an error.
    if (this.p.replica.revision < revision && !this.isApplied(op)) {
      if (this.p.status.stopped || this.p.status.closed) throw this.p.status.endError();
      throw new StateSyncError("UNAVAILABLE", `the command stored at ${revision} is not read yet`);
    }
    const row = this.p.replica.origins.get(op.origin);
    return { revision: row && row.seq === op.seq ? row.revision : revision };
  }

  /** Whether the confirmed state holds `op` (the table of applied origins, invariant 1). */
  isApplied(op: PendingOp): boolean {
    return op.seq <= (this.p.replica.origins.get(op.origin)?.seq ?? 0);
  }

  /** The result of an update found in the confirmed state (its own answer was lost). */
  confirmedResult(op: PendingOp): unknown {
    const row = this.p.replica.origins.get(op.origin);
    const revision = row?.revision ?? this.p.replica.revision;
    if (op.kind === "command") return { revision };
    const result: UpdateResult<S, unknown> = {
      revision,
      state: this.p.replica.state as Immutable<S>,
      result: undefined,
      attempts: op.attempts,
    };
    return result;
  }
}
