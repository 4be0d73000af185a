import { jsonEqual, type Immutable } from "@statesync/core";
import { runItems } from "./run-items.js";
import type { Item } from "./shared-pending-wire.js";

/**
 * The view of a tab's pending items (`sharePendingAcrossTabs`: the other tabs' on this tab's
 * optimistic state, or every tab's on its confirmed state, in push order), kept from one call
 * to the next so a change costs what changed, not the whole list (a trial: three tabs handing
 * their queues over edit by edit spent about 100 ms of CPU per handoff re-running every pending
 * item, O(n²) for n edits). `run(base, list, revision)` returns what `runItems(base, list,
 * revision)` returns (the view computed afresh), reusing the last one when it can:
 *
 * - items added at the end of the list (the order key of each sorts after those before it) on
 *   the same base and revision are run on top of the last view;
 * - when the list lost a prefix of the last one (its items committed) and `base` is, value for
 *   value, the last base with that prefix run on it (core's `jsonEqual`: shared subtrees compare by
 *   identity, so this costs what the entries changed), the last view stands, with the items
 *   added since run on top (a queue of n that commits item by item costs O(n) runs of its
 *   commands, not O(n²));
 * - anything else (an item left from the middle, one sorts before items already run, another
 *   writer's entry, a refusal) computes it afresh.
 *
 * As the core's view keeps its cached state while its own entries commit (core
 * pending/optimistic.ts, invariant 2), the items kept ran with the context of the revision they
 * were first run at (`ctx.revision`); everything else is as computed afresh.
 */
export class IncrementalView<S> {
  private last:
    | { base: Immutable<S>; revision: number; list: readonly Item[]; state: Immutable<S> }
    | undefined;
  /** What the last computation afresh cost, ms (spaces the notifications after it). */
  lastCostMs = 0;
  /** Counts how each call was answered (tests). */
  readonly counts = { afresh: 0, appended: 0, committed: 0 };

  /** Forgets the last view (the next call computes afresh). */
  reset(): void {
    this.last = undefined;
  }

  /** `runItems(base, list, revision)`, from the last view when it can (see the class). */
  run(base: Immutable<S>, list: readonly Item[], revision: number): Immutable<S> {
    const c = this.last;
    if (c !== undefined) {
      const k = list.length === 0 ? c.list.length : keptFrom(c.list, list);
      if (k !== undefined) {
        const kept = c.list.length - k;
        const added = list.slice(kept);
        if (k === 0 && base === c.base && revision === c.revision) {
          this.counts.appended += 1;
          return this.keep(base, revision, list, runItems(c.state, added, revision));
        }
        if (k > 0 && jsonEqual(runItems(c.base, c.list.slice(0, k), c.revision), base)) {
          this.counts.committed += 1;
          return this.keep(base, revision, list, runItems(c.state, added, revision));
        }
      }
    }
    this.counts.afresh += 1;
    const started = performance.now();
    const state = runItems(base, list, revision);
    this.lastCostMs = performance.now() - started;
    return this.keep(base, revision, list, state);
  }

  private keep(
    base: Immutable<S>,
    revision: number,
    list: readonly Item[],
    state: Immutable<S>,
  ): Immutable<S> {
    this.last = { base, revision, list: [...list], state };
    return state;
  }
}

/**
 * `k` when `list` begins with `before[k..]` (the same items, by identity), the items after
 * those being new; undefined otherwise (an item left from the middle, or one came before).
 */
function keptFrom(before: readonly Item[], list: readonly Item[]): number | undefined {
  let k = before.indexOf(list[0]!);
  if (k === -1) k = before.length; // every item is new (or all before left)
  const kept = before.length - k;
  if (kept > list.length) return undefined;
  for (let i = 0; i < kept; i++) if (before[k + i] !== list[i]) return undefined;
  // A new item that was in the list before, further on: it did not keep its place.
  if (kept < before.length || list.length > kept) {
    const old = new Set(before);
    for (let i = kept; i < list.length; i++) if (old.has(list[i]!)) return undefined;
  }
  return k;
}
