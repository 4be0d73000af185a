import {
  entryContext,
  pendingContext,
  runQueued,
  type Immutable,
  type PendingUpdate,
} from "@statesync/core";
import type { Item } from "./shared-pending-wire.js";

/**
 * `items` run on `state` in as few drafts as can be (`runQueued`, as the core's view does),
 * leaving the ones that throw out, and the ones that return a promise.
 */
export function runItems<S>(
  state: Immutable<S>,
  items: readonly Item[],
  revision: number,
): Immutable<S> {
  if (items.length === 0) return state;
  return runQueued(state, items, (view, item) => {
    // The context the command's own replica shows it with and commits it with (`pendingContext`:
    // queued at, seeded by its identity), so a tab's edit shows the same values in every tab, and
    // in its own whatever runs around it (a trial: clientId was the tab's id, random reseeded by
    // the mixed view).
    const client = item.client ?? item.from;
    const ctx =
      item.origin !== undefined && item.seq !== undefined
        ? pendingContext(
            revision,
            { origin: item.origin, seq: item.seq, queuedAt: item.at },
            client,
          )
        : entryContext(revision, item.at, item.at >>> 0, client);
    return item.c.apply(view as never, item.args as never, ctx as never);
  });
}

/**
 * The order pending updates of several tabs run in (the order their queues push them in:
 * `PushOrder`): by `at`, then origin, then seq. An item without an origin (a tab of an older
 * version) comes after every item with one. For a stable sort.
 */
export function byQueueOrder(a: Item, b: Item): number {
  if (a.origin === undefined || b.origin === undefined) {
    return (a.origin === undefined ? 1 : 0) - (b.origin === undefined ? 1 : 0);
  }
  if (a.at !== b.at) return a.at - b.at;
  if (a.origin !== b.origin) return a.origin < b.origin ? -1 : 1;
  return a.seq! - b.seq!;
}

/**
 * This tab's own pending updates (`pending`) as items (each checked once, by `check`), to run in
 * one order with the other tabs' (`others`) when one of its own was queued after one of theirs:
 * the function returned gives them all in push order then, undefined when they need not be run
 * so (or cannot be: a plain recipe runs only in the core's own view, which shows it first).
 */
export function interleave(
  pending: () => readonly PendingUpdate[],
  check: (p: PendingUpdate) => Item | null,
): (others: readonly Item[]) => Item[] | undefined {
  const own = new Map<string, Item | null>();
  return (others) => {
    const first = others.reduce<Item | undefined>(
      (f, o) => (o.origin !== undefined && (!f || byQueueOrder(o, f) < 0) ? o : f),
      undefined,
    );
    if (!first) return undefined;
    const items: Item[] = [];
    let after = false;
    const now = new Set<string>();
    for (const p of pending()) {
      if (p.otherLog) continue;
      if (p.command === undefined) return undefined;
      const id = `${p.origin}\n${p.id}`;
      now.add(id);
      let item = own.get(id);
      if (item === undefined) own.set(id, (item = check(p)));
      if (item) items.push(item);
      after ||= item !== null && byQueueOrder(first, item) < 0;
    }
    for (const id of own.keys()) if (!now.has(id)) own.delete(id);
    return after ? [...items, ...others].sort(byQueueOrder) : undefined;
  };
}
