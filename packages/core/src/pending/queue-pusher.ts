import { wakeableSleep } from "../backoff.js";
import type { StatusHub } from "../engine/status.js";
import type { PendingOp } from "./pending-op.js";
import { orderKey, PushTurns, type PushOrder } from "./push-order.js";

/** Longest wait between pushes while appends fail (ms); a reconnection ends a wait at once. */
const MAX_BACKOFF_MS = 30_000;

/** The wait after `failures` failed pushes in a row: 250 ms doubling to 30 s. */
const backoff = (failures: number) => Math.min(MAX_BACKOFF_MS, 250 * 2 ** Math.min(failures, 7));

/** The steps of one push, which the queue decides (`OfflineQueue`). */
export interface PushSteps {
  /** Drops what the confirmed state already holds; the first queued op, if any. */
  head(): Promise<PendingOp | undefined>;
  /** Whether an op is queued (a push is worth starting). */
  anyQueued(): boolean;
  /** Refuses an op that fails its own validation (dropped, never retried). */
  refuseInvalid(op: PendingOp): Promise<void>;
  /** Whether the log the ops are bound to was checked (`LogBinding`, invariant 2). */
  logChecked(): boolean;
  /** Checks the log; false when it could not tell (tried again after a backoff). */
  checkLog(): Promise<boolean>;
  /**
   * Sends the chunk that starts at `head`, as far as `cut` lets it go (no update of another
   * queue queued before one of it: `PushTurns`): "retry" (after a backoff), "sent" or "stopped".
   */
  send(
    head: PendingOp,
    cut: (chunk: PendingOp[]) => PendingOp[],
  ): Promise<"sent" | "retry" | "stopped">;
  /** The replica stopped: its callers learn why. */
  stopped(): void;
}

/**
 * The offline queue's push loop (invariants 2 and 3 of `OfflineQueue`): one push at a time,
 * chunk after chunk in order, while the replica is live, each behind the other queues' updates
 * queued before it (`PushTurns`); after a failure it waits a backoff
 * (250 ms doubling to 30 s), which a reconnection, `flush()`, a new update or `close()` end.
 */
export class QueuePusher {
  private pushing: Promise<void> | undefined;
  private waking: (() => void) | undefined;
  private readonly turns: PushTurns;
  private readonly cut = (chunk: PendingOp[]) => this.turns.cut(chunk, orderKey);

  /** `order`: the other queues' updates this queue's must not overtake (push-order.ts). */
  constructor(
    private readonly status: StatusHub,
    private readonly steps: PushSteps,
    order?: PushOrder,
    replica?: ConstructorParameters<typeof PushTurns>[2],
  ) {
    this.turns = new PushTurns(order, status.signal, replica);
  }

  /** Starts a push unless one runs, the replica stopped, or nothing is queued. */
  kick(): void {
    if (this.pushing || this.status.stopped) return;
    if (!this.steps.anyQueued()) return;
    this.pushing = this.push().finally(() => {
      this.pushing = undefined;
      if (!this.status.stopped && !this.status.closed) this.kick();
    });
  }

  /** Ends the current wait (a reconnection, `flush()`, a new update, `close()`). */
  wake(): void {
    this.waking?.();
  }

  /** Resolves once the push running (if any) ended. */
  idle(): Promise<void> {
    return this.pushing ?? Promise.resolve();
  }

  private async push(): Promise<void> {
    for (let failures = 0; !this.status.stopped;) {
      const head = await this.steps.head();
      if (head === undefined) return;
      if (head.invalid) {
        await this.steps.refuseInvalid(head);
        continue;
      }
      if (this.status.status !== "live") {
        await this.pause(MAX_BACKOFF_MS);
        continue;
      }
      if (!this.steps.logChecked()) {
        if (!(await this.steps.checkLog())) await this.pause(backoff(++failures));
        continue;
      }
      if (!(await this.turns.turn(orderKey(head)))) continue;
      const sent = await this.steps.send(head, this.cut);
      if (sent === "stopped") return this.steps.stopped();
      failures = sent === "retry" ? failures + 1 : 0;
      if (sent === "retry") await this.pause(backoff(failures));
    }
    this.steps.stopped();
  }

  private async pause(ms: number): Promise<void> {
    const wait = wakeableSleep(ms, this.status.signal);
    this.waking = wait.wake;
    await wait.done;
    this.waking = undefined;
  }
}
