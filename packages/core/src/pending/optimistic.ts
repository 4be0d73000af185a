import type { Immutable } from "immer";
import { pendingContext, type entryContext } from "../apply.js";
import { StateSyncError } from "../errors.js";
import type { StatusHub } from "../engine/status.js";
import type { StepResult } from "../replay.js";
import { inRecipes } from "../synchronous.js";
import { runQueued } from "../engine/view-runs.js";
import type { Origins } from "./origins.js";

/** What the view needs of one pending update. */
export interface ViewOp {
  /** With `seq`, its identity in the log: confirmed once the table holds `seq` for `origin`. */
  readonly origin: string;
  readonly seq: number;
  readonly queuedAt: number;
  run(draft: unknown, ctx: ReturnType<typeof entryContext>): unknown;
}

/** What the view needs of the replica. */
export interface ViewSource<S> {
  readonly state: Immutable<S>;
  readonly revision: number;
  readonly origins: Origins;
  subscribe(listener: () => void): () => void;
  onApplied(listener: (batch: { readonly results: readonly StepResult[] }) => void): void;
}

/**
 * The optimistic view (docs/offline.md): the confirmed state with every still-pending update of
 * this replica applied on top, in queue order.
 *
 * Invariants:
 * 1. Never a state without a still-pending update, never one twice: an update counts as
 *    confirmed exactly when the replica's table of applied origins holds its seq, which changes
 *    in the same synchronous step as the confirmed state.
 * 2. Batched: the view is computed lazily, at most once per change of the confirmed state (in
 *    shared Immer drafts: `runQueued`), however many entries that change consumed; an update
 *    queued on an unchanged confirmed state is applied alone on top of the cached view. When the
 *    confirmed state moved only by this queue's own entries (its head committed, nobody else
 *    wrote), the cached view stays: it already held those updates, on the same base, in the
 *    same order (so a queue of n drains in O(n), not O(n²)). Only another writer's entry (or a
 *    snapshot, or a refused or discarded update) makes it re-apply the pending updates.
 * 3. Subscribers are called once per microtask, after the replica's own notification, with the
 *    view as it is then (`optimisticState`, read directly, is always computed for now). An update that throws or is refused here is left out of the view (it is
 *    refused when it is pushed).
 * 4. Bounded cost while other writers' entries arrive one by one: when re-applying the pending
 *    updates took t ≥ 1 ms, the next notification comes after 4t (at most 2 s), so at most a
 *    fifth of the time goes to re-applying however fast entries come (for t up to 500 ms); they
 *    are batched into it. The cap was 250 ms: with a thousand pending updates costing about 1 s
 *    to re-apply, a page was busy four fifths of the time (stop 26's trial).
 */
const MAX_NOTIFY_DELAY_MS = 2_000;

/**
 * How long a view's next notification waits after a recompute that cost `costMs` (invariant
 * 4): 0 under 1 ms, else 4 × the cost, at most 2 s. Also the browser's view of other tabs' edits.
 */
export function notifyDelayMs(costMs: number): number {
  return costMs < 1 ? 0 : Math.min(MAX_NOTIFY_DELAY_MS, 4 * costMs);
}
const changesOnlyListeners = new WeakSet<object>();

/**
 * Marks an optimistic subscriber (`subscribe(listener, { optimistic: true })`) as one that only
 * needs to hear that the view changed, not the view: while every subscriber is so marked, a
 * notification does not compute the view (the browser's view of other tabs' edits replaces it
 * and reads it only when it needs it). Such a listener is called with `undefined` as the state.
 * Returns `listener`. Internal to the SDK's packages.
 */
export function changesOnly<L extends object>(listener: L): L {
  changesOnlyListeners.add(listener);
  return listener;
}

export class OptimisticView<S> {
  private cached:
    { revision: number; base: Immutable<S>; upTo: number; state: Immutable<S> } | undefined;
  private readonly subscribers = new Set<(state: Immutable<S>, revision: number) => void>();
  private scheduled = false;
  /** What the last full re-application took, ms (invariant 4). */
  private lastCostMs = 0;
  private unsubscribe: (() => void) | undefined;

  constructor(
    private readonly source: ViewSource<S>,
    /** The origins of this queue's updates, this session's and its records' (invariant 2). */
    private readonly origins: () => ReadonlySet<string>,
    private readonly ops: () => readonly ViewOp[],
    private readonly clientId: string,
    private readonly status: StatusHub,
  ) {
    source.onApplied((batch) => this.applied(batch.results));
  }

  /** Invariant 2: a batch of this queue's own entries keeps the cached view valid. */
  private applied(results: readonly StepResult[]): void {
    const c = this.cached;
    if (c === undefined) return;
    const own = results.every(
      (r) =>
        r.kind === "applied" &&
        (r.entry.kind === "intent" ||
          ((r.entry.kind === "update" || r.entry.kind === "command") &&
            r.entry.origin !== undefined &&
            this.origins().has(r.entry.origin[0]))),
    );
    if (own && c.revision === this.seen) {
      c.base = this.source.state;
      c.revision = this.source.revision;
    }
    this.seen = this.source.revision;
  }

  /** The replica's revision after the last batch it announced. */
  private seen = 0;

  /** The view now (invariant 2). */
  get state(): Immutable<S> {
    const base = this.source.state;
    const revision = this.source.revision;
    const pending = this.unconfirmed();
    if (pending.length === 0) return base;
    const c = this.cached;
    if (c && c.base === base && c.revision === revision) {
      const last = pending[pending.length - 1]!.seq;
      if (c.upTo === last) return c.state;
      if (c.upTo < last) {
        const added = pending.filter((op) => op.seq > c.upTo);
        return this.keep(base, revision, pending, this.apply(c.state, added, revision));
      }
    }
    const start = Date.now();
    const state = this.apply(base, pending, revision);
    this.lastCostMs = Date.now() - start;
    return this.keep(base, revision, pending, state);
  }

  /** The pending updates the confirmed state does not hold yet, in order. */
  unconfirmed(): readonly ViewOp[] {
    const ops = this.ops();
    if (ops.length === 0) return ops;
    // The array itself when none is confirmed: at once when the queue holds one origin only (a
    // session that loaded no earlier session's records) and its first op is not confirmed.
    const first = ops[0]!;
    if (this.origins().size === 1) {
      if (first.seq > (this.source.origins.get(first.origin)?.seq ?? 0)) return ops;
    }
    // Otherwise one look-up per run of ops of one origin (a session's follow its earlier
    // sessions' records, so there are few).
    let origin: string | undefined;
    let applied = 0;
    let out: ViewOp[] | undefined;
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      if (op.origin !== origin) {
        origin = op.origin;
        applied = this.source.origins.get(origin)?.seq ?? 0;
      }
      if (op.seq > applied) out?.push(op);
      else out ??= ops.slice(0, i);
    }
    return out ?? ops;
  }

  /** An update left the queue unconfirmed (refused, discarded): the view is computed afresh. */
  invalidate(): void {
    this.cached = undefined;
    this.changed();
  }

  /** Something changed (an update queued, the confirmed state): subscribers hear of it. */
  changed(): void {
    if (this.subscribers.size === 0 || this.scheduled) return;
    this.scheduled = true;
    // Invariant 4: after a costly re-application, the next notification waits a few times its
    // cost, so entries of other writers arriving one by one join one re-application.
    const wait = notifyDelayMs(this.lastCostMs);
    const notify = () => {
      this.scheduled = false;
      let read = false;
      for (const l of this.subscribers) read ||= !changesOnlyListeners.has(l);
      const state = read ? this.state : (undefined as unknown as Immutable<S>);
      this.status.notify(this.subscribers, state, this.source.revision);
    };
    if (wait === 0) queueMicrotask(notify);
    else setTimeout(notify, wait);
  }

  subscribe(listener: (state: Immutable<S>, revision: number) => void): () => void {
    if (typeof listener !== "function") {
      throw new StateSyncError("VALIDATION", "listener must be a function");
    }
    this.subscribers.add(listener);
    this.unsubscribe ??= this.source.subscribe(() => this.changed());
    return () => {
      this.subscribers.delete(listener);
      if (this.subscribers.size === 0) {
        this.unsubscribe?.();
        this.unsubscribe = undefined;
      }
    };
  }

  private keep(
    base: Immutable<S>,
    revision: number,
    pending: readonly ViewOp[],
    state: Immutable<S>,
  ): Immutable<S> {
    this.cached = { base, revision, upTo: pending[pending.length - 1]!.seq, state };
    this.seen = revision;
    return state;
  }

  /**
   * `ops` applied on `state` in as few drafts as can be (`runQueued`), leaving the ones that throw
   * out, and the ones that return a promise (`refuseThenable`: refused when pushed, and shown here
   * never, even in part).
   */
  private apply(state: Immutable<S>, ops: readonly ViewOp[], revision: number): Immutable<S> {
    const ctx = (op: ViewOp) => pendingContext(revision, op, this.clientId); // as committed
    return inRecipes(() => runQueued(state, ops, (view, op) => op.run(view, ctx(op))));
  }
}
