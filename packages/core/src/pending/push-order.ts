import { wakeableSleep } from "../backoff.js";

/**
 * Where a pending update stands among the pending updates of several queues: by the time it was
 * queued, then its queue session, then its id (`PendingUpdate.queuedAt`, `origin`, `id`).
 */
export interface OrderKey {
  /** ms since the epoch, the clock of the page or process that queued it. */
  readonly queuedAt: number;
  readonly origin: string;
  readonly id: number;
}

/** The key of a queued update (`PendingOp`: its `seq` is its `id`). */
export const orderKey = (op: {
  readonly queuedAt: number;
  readonly origin: string;
  readonly seq: number;
}): OrderKey => ({ queuedAt: op.queuedAt, origin: op.origin, id: op.seq });

/** Negative when `a` comes before `b`, positive after, 0 for the same update. */
export function compareOrderKeys(a: OrderKey, b: OrderKey): number {
  if (a.queuedAt !== b.queuedAt) return a.queuedAt - b.queuedAt;
  if (a.origin !== b.origin) return a.origin < b.origin ? -1 : 1;
  return a.id - b.id;
}

/**
 * The earliest of `candidates` that a push of `key` must wait for: of another origin, before
 * `key`, not passed over by `skip`, not applied yet (`applied`, as in {@link PushOrder.before});
 * undefined when none. For the implementations of `before`.
 */
export function earliestBefore(
  key: OrderKey,
  candidates: Iterable<OrderKey>,
  skip: (other: OrderKey) => boolean,
  applied: (origin: string) => number | undefined,
): OrderKey | undefined {
  let first: OrderKey | undefined;
  for (const k of candidates) {
    if (k.origin === key.origin || compareOrderKeys(k, key) >= 0 || skip(k)) continue;
    if ((applied(k.origin) ?? -Infinity) >= k.id) continue;
    if (first === undefined || compareOrderKeys(k, first) < 0) first = k;
  }
  return first;
}

/**
 * The pending updates of other queues that this queue's must not overtake (browser tabs of one
 * profile, each with its own queue: `@statesync/browser`, docs/offline.md "Tabs"). Given as
 * `pendingQueue({ …, order })`; without it a queue pushes in its own order only.
 */
export interface PushOrder {
  /**
   * The earliest update of another queue, not in this replica's confirmed state yet (`applied`:
   * the highest id of an origin that this replica, the one pushing, applied), that comes before
   * `key` (`compareOrderKeys`) and that `skip` does not pass over; undefined when none.
   */
  before(
    key: OrderKey,
    skip: (other: OrderKey) => boolean,
    applied: (origin: string) => number | undefined,
  ): OrderKey | undefined;
  /** Calls `listener` whenever `before` may answer otherwise; returns its unsubscribe. */
  onChange(listener: () => void): () => void;
}

/**
 * How long (ms, while the replica is live) an update waits for one update of another queue that
 * comes before it: then it goes first, and so do the later ones, past every update of that queue
 * until the queue commits something (`PushTurns.passed`). A tab that holds its edits back (frozen
 * in the background, its queue not taken over) cannot hold the others' for longer.
 */
export const ORDER_WAIT_MS = 10_000;

const idOf = (k: OrderKey) => `${k.origin}\n${k.id}`;

/**
 * The push loop's side of a {@link PushOrder} (`OfflineQueue`): whether the head of the queue
 * may go now, and which of the chunk behind it may go with it.
 */
export class PushTurns {
  /**
   * Queues (origins) an update of which was waited for `ORDER_WAIT_MS` in vain, with what this
   * replica had applied of them then: none of their updates is waited for again until that
   * changes (a frozen tab with ten edits held the others' for 100 s, ten waits: a trial).
   */
  private readonly passed = new Map<string, number>();
  private blocked: { id: string; since: number } | undefined;

  constructor(
    private readonly order: PushOrder | undefined,
    /** Aborted when the replica closes or stops: a wait ends. */
    private readonly signal: AbortSignal,
    /**
     * The replica that pushes: what it applied, and a call after each change of its state (an
     * update of another queue is waited for until this replica holds it, not another one of the
     * same page: a trial's drain replica pushed on a state without it, and was refused).
     */
    private readonly replica: {
      appliedSeq(origin: string): number | undefined;
      onChange(listener: () => void): () => void;
    } = { appliedSeq: () => undefined, onChange: () => () => undefined },
    private readonly waitMs = ORDER_WAIT_MS,
  ) {}

  private readonly applied = (origin: string) => this.replica.appliedSeq(origin);

  private readonly skip = (other: OrderKey) => {
    const at = this.passed.get(other.origin);
    return at !== undefined && at === (this.applied(other.origin) ?? 0);
  };

  /**
   * True when `head` may be sent now. Otherwise waits until the order changes (or the wait for
   * the update in front of it is over) and resolves false: the caller looks at its queue again.
   */
  async turn(head: OrderKey): Promise<boolean> {
    const bar = this.order?.before(head, this.skip, this.applied);
    if (bar === undefined) {
      this.blocked = undefined;
      return true;
    }
    const id = idOf(bar);
    const now = Date.now();
    if (this.blocked?.id !== id) this.blocked = { id, since: now };
    const left = this.blocked.since + this.waitMs - now;
    if (left <= 0) {
      this.passed.set(bar.origin, this.applied(bar.origin) ?? 0);
      this.blocked = undefined;
      return false;
    }
    const wait = wakeableSleep(left, this.signal);
    const offs = [this.order!.onChange(wait.wake), this.replica.onChange(wait.wake)];
    await wait.done.finally(() => offs.forEach((off) => off()));
    return false;
  }

  /** The leading part of `chunk` (its head may go) that no update of another queue comes before. */
  cut<T>(chunk: T[], keyOf: (op: T) => OrderKey): T[] {
    if (!this.order) return chunk;
    const end = chunk.findIndex(
      (op, i) => i > 0 && this.order!.before(keyOf(op), this.skip, this.applied) !== undefined,
    );
    return end < 0 ? chunk : chunk.slice(0, end);
  }
}
