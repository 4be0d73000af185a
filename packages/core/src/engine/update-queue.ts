import type { StatusHub } from "./status.js";
import { unsent } from "./wait-limits.js";
import { limitsOfUpdate, type QueuedUpdate } from "./write-batch.js";
import { whenAborted } from "../abort-watch.js";

/**
 * The writer's local queue of conditional updates, in call order. An update waits here while
 * the batch before it is written (which may wait itself: for the log, behind other writers);
 * its own limits end that wait too: an aborted `signal` rejects it at once (`ABORTED`), its
 * deadline (its call + `outcomeTimeoutMs`) with `UNAVAILABLE` (`details.notSent`). Nothing of
 * it was sent (see `wait-limits.ts`).
 *
 * Cheap when nothing waits: an update taken at once (the writer idle) leaves no timer, and only
 * updates with a signal get a listener.
 */
export class UpdateQueue<S> {
  private ops: QueuedUpdate<S>[] = [];
  private readonly listeners = new Map<QueuedUpdate<S>, () => void>();
  /** The earliest deadline queued (a lower bound once updates were taken). */
  private earliest = Infinity;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;

  constructor(private readonly status: StatusHub) {}

  get length(): number {
    return this.ops.length;
  }

  /** Queues `ops` at the end (their deadlines start now unless set) or, `first`, at the front. */
  add(ops: readonly QueuedUpdate<S>[], first = false): void {
    const now = Date.now();
    for (const op of ops) {
      op.deadline ??= now + op.outcomeTimeoutMs;
      if (op.deadline < this.earliest) this.earliest = op.deadline;
      const signal = op.signal;
      if (signal && !this.listeners.has(op)) {
        this.listeners.set(
          op,
          whenAborted(signal, () => this.sweep()),
        );
      }
    }
    if (first) this.ops.unshift(...ops);
    else this.ops.push(...ops);
  }

  /** Takes up to `n` updates from the front. */
  take(n: number): QueuedUpdate<S>[] {
    const taken = this.ops.splice(0, n);
    for (const op of taken) this.unwatch(op);
    if (this.ops.length === 0) this.disarm();
    return taken;
  }

  /** Arms the timer for the earliest deadline of what still waits (after the writer took). */
  arm(): void {
    if (this.ops.length === 0 || !Number.isFinite(this.earliest)) return;
    if (this.timer !== undefined && this.timerAt <= this.earliest) return;
    this.disarm();
    this.timerAt = this.earliest;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.sweep();
      },
      Math.max(0, this.earliest - Date.now()),
    );
  }

  /** Rejects every queued update with `error`. */
  rejectAll(error: unknown): void {
    for (const op of this.take(this.ops.length)) op.reject(error);
  }

  /** Rejects the updates whose limits ended (see `unsent`), and arms for the next deadline. */
  private sweep(): void {
    this.earliest = Infinity;
    this.ops = this.ops.filter((op) => {
      const error = unsent(this.status, limitsOfUpdate(op));
      if (!error) {
        if (op.deadline! < this.earliest) this.earliest = op.deadline!;
        return true;
      }
      this.unwatch(op);
      op.reject(error);
      return false;
    });
    if (this.ops.length === 0) this.disarm();
    else this.arm();
  }

  private unwatch(op: QueuedUpdate<S>): void {
    const stop = this.listeners.get(op);
    if (!stop) return;
    stop();
    this.listeners.delete(op);
  }

  private disarm(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.ops.length === 0) this.earliest = Infinity;
  }
}
