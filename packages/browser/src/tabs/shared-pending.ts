import {
  changesOnly,
  earliestBefore,
  notifyDelayMs,
  safeParse,
  type CommandMap,
  type Immutable,
  type Model,
  type OrderKey,
  type StateSynchronizer,
} from "@statesync/core";
import { IncrementalView } from "./mixed-view.js";
import { byQueueOrder, interleave } from "./run-items.js";
import { messageSchema, type Command, type Foreign, type Item } from "./shared-pending-wire.js";
import type { TabPushOrder } from "./tab-order.js";

/**
 * Shows the other tabs' pending updates in this tab's optimistic view, before the server has
 * them (docs/offline.md, "Tabs"): each tab posts its pending named commands (on a
 * `BroadcastChannel` of its own) whenever they change, with its confirmed revision; the others
 * run them on top of their own optimistic view, or, when one of their own was queued after one
 * of them, all on the confirmed state in the order the queues push them in. Returns `sync` with `optimisticState` and
 * `subscribe(…, { optimistic: true })` showing them (what the React hooks read), and a stop
 * function.
 *
 * Another tab's update is shown until this tab's confirmed state includes it (its origin and id
 * against the table of applied origins: `appliedSeq`), so it neither shows twice nor drops out
 * while unrelated entries arrive; one reported without an origin (an older version's tab) only
 * while this tab's confirmed revision is not past the one its tab reported. A command that
 * throws here or returns a promise, or arguments this model refuses, are left out. Plain recipes
 * are not shared. `queue` names this tab's queue (its slot's owner): a report of a queue replaces
 * the reports of that queue from other tabs, so the edits of a tab reloaded while offline (the
 * same queue, a new tab) show once: the old tab never said it was gone (a trial saw them twice
 * in every other tab for as long as the server was down). `tabOrder`, the order this tab's queue
 * pushes in, is given the other tabs' updates it must not overtake.
 */
export function sharePendingAcrossTabs<S, C extends CommandMap<S>>(
  sync: StateSynchronizer<S, C>,
  model: Model<S, C>,
  name: string,
  tabId: string,
  queue?: string,
  tabOrder?: TabPushOrder,
): { sync: StateSynchronizer<S, C>; stop(): void } {
  const channel = new BroadcastChannel(`${name}:pending`);
  const foreign = new Map<string, Foreign>();
  /** Every shown item of the other tabs, in the order they arrived (the order they run in). */
  const order = new Map<string, Item>();
  const listeners = new Set<() => void>();
  // The view computed last, reused by the next (mixed-view.ts).
  const incremental = new IncrementalView<S>();
  /** What the last view cost, ms (spaces the notifications after it). */
  let lastCostMs = 0;

  // This tab's side: what it reported last, by id.
  let seq = 0;
  let reported = new Set<number>();
  let reportedRevision = -1;
  let whole = true;
  let posting = false;
  let stopped = false;
  const send = (message: unknown) => {
    try {
      channel.postMessage(message);
    } catch {
      // closed
    }
  };
  const wire = (p: (typeof sync.pending)[number]) => ({
    id: p.id,
    o: p.origin,
    c: p.command!,
    a: p.args,
    at: p.queuedAt,
    cl: sync.clientId,
  });
  const post = (all = false) => {
    if (all) whole = true;
    if (posting) return;
    posting = true;
    queueMicrotask(() => {
      posting = false;
      if (stopped) return;
      // Not those set aside for another log: no tab shows them, none waits for them (a trial:
      // every other tab showed them and waited 10 s for each before its first push).
      const named = sync.pending.filter((p) => p.command !== undefined && !p.otherLog);
      const revision = sync.revision;
      if (whole) {
        whole = false;
        reported = new Set(named.map((p) => p.id));
        reportedRevision = revision;
        seq += 1;
        send({ t: "pending", from: tabId, q: queue, seq, revision, ops: named.map(wire) });
        return;
      }
      // Proportional to the change: what is new, what left (one pass over the list, no copies
      // of the items that stayed).
      const now = new Set<number>();
      const add = [];
      for (const p of named) {
        now.add(p.id);
        if (!reported.has(p.id)) add.push(wire(p));
      }
      const remove: number[] = [];
      if (now.size - add.length !== reported.size) {
        for (const id of reported) if (!now.has(id)) remove.push(id);
      }
      if (add.length === 0 && remove.length === 0 && revision === reportedRevision) return;
      reported = now;
      reportedRevision = revision;
      seq += 1;
      send({ t: "delta", from: tabId, q: queue, seq, revision, add, remove });
    });
  };

  /** Checks one reported command once: the item to run, or null (left out). */
  const check = (
    from: string,
    op: { id?: number; o?: string; c: string; a: unknown; at: number; cl?: string },
  ): Item | null => {
    const command = model.commands[op.c] as Command | undefined;
    // Another tab's report (or this queue's stored args): a refinement that throws leaves it out.
    const args = command && safeParse(command.args, op.a);
    if (!command || !args?.success) return null;
    const item: Item = { from, name: op.c, c: command, args: args.data, at: op.at };
    if (op.cl !== undefined) item.client = op.cl;
    if (op.o !== undefined && op.id !== undefined)
      Object.assign(item, { origin: op.o, seq: op.id });
    return item;
  };
  /**
   * Items their tab no longer reports, kept in view until this tab's confirmed revision reaches
   * the one that tab reported then (`key` → revision): a tab drops an update from its list once
   * its own confirmed state includes it, and that report can arrive before this tab has read
   * the entry (another channel). Dropped at once, the edit vanished from this view and came
   * back with the entry (a trial saw it in every round of a reconnection). One its tab refused
   * or discarded leaves at that revision; one it committed is left out once applied here.
   */
  const leaving = new Map<string, number>();
  const drop = (f: Foreign, id: number | string, until = -1) => {
    const known = f.items.get(id);
    f.items.delete(id);
    if (!known) return;
    if (known.item.origin !== undefined && sync.revision < until) {
      leaving.set(known.key, until);
      return;
    }
    order.delete(known.key);
    leaving.delete(known.key);
  };
  const put = (
    from: string,
    f: Foreign,
    id: number | string,
    op: { id?: number; o?: string; c: string; a: unknown; at: number },
  ) => {
    if (f.items.has(id)) return;
    const item = check(from, op);
    if (item === null) return void f.items.set(id, null);
    const key = `${from}\n${id}`;
    leaving.delete(key); // reported again: it stays
    f.items.set(id, { key, item });
    order.set(key, item);
  };
  const forget = (from: string) => {
    for (const key of leaving.keys()) {
      if (!key.startsWith(`${from}\n`)) continue;
      leaving.delete(key);
      order.delete(key);
    }
    const f = foreign.get(from);
    if (!f) return;
    for (const id of [...f.items.keys()]) drop(f, id);
    foreign.delete(from);
  };
  const setRevision = (f: Foreign, revision: number) => {
    f.revision = revision;
  };

  channel.onmessage = (e: MessageEvent) => {
    const m = messageSchema.safeParse(e.data);
    if (!m.success) return;
    if (m.data.t === "hello") {
      if (m.data.to === undefined || m.data.to === tabId) post(true);
      return;
    }
    const { from, q, revision } = m.data;
    if (from === tabId) return;
    if (m.data.t === "delta") {
      const f = foreign.get(from);
      if (!f || f.seq === undefined || m.data.seq !== f.seq + 1 || f.q !== q) {
        // A step missed (or a report of another queue): ask that tab for its whole list.
        send({ t: "hello", to: from });
        return;
      }
      f.seq = m.data.seq;
      setRevision(f, revision);
      for (const id of m.data.remove) drop(f, id, revision);
      for (const op of m.data.add) put(from, f, op.id, op);
      if (f.items.size === 0) foreign.delete(from);
    } else {
      if (q !== undefined) {
        for (const [other, f] of [...foreign]) if (other !== from && f.q === q) forget(other);
      }
      const { ops, seq: at } = m.data;
      let f = foreign.get(from);
      if (f && f.q !== q) {
        forget(from);
        f = undefined;
      }
      f ??= { revision, q, seq: undefined, items: new Map() };
      foreign.set(from, f);
      f.seq = at;
      setRevision(f, revision);
      // Items the tab reported before keep their place (and their check); ids are its queue's,
      // a report without them is taken as new.
      const ids = ops.map((op, i) => op.id ?? `#${at ?? "-"}:${i}`);
      const keep = new Set<number | string>(ids);
      for (const id of [...f.items.keys()]) if (!keep.has(id)) drop(f, id, revision);
      ops.forEach((op, i) => put(from, f, ids[i]!, op));
      if (f.items.size === 0) foreign.delete(from);
    }
    for (const l of [...listeners]) l();
  };
  const stops = [
    sync.subscribe(
      changesOnly(() => post()),
      { optimistic: true },
    ),
    sync.on("drained", () => post()),
  ];
  send({ t: "hello" });
  post(true);

  // Left out: an item the confirmed state includes already (it would show twice). Known exactly
  // by its identity in the log: the table of applied origins says whether this replica applied
  // it. An item without one (a tab of an older version) is left out as soon as this tab's
  // revision is past its tab's report, till that tab's next report (a trial: under a busy writer
  // every other tab's items flickered out for up to a second, and a closed tab's stayed out
  // until its queue was taken over).
  const shown = (item: Item) =>
    item.origin !== undefined
      ? !((sync.appliedSeq(item.origin) ?? -Infinity) >= item.seq!)
      : sync.revision <= (foreign.get(item.from)?.revision ?? -1);
  // A queue of this tab (its own, `queue`, or a dead tab's slot it drains) does not overtake an
  // update of another queue queued before one of its own (docs/offline.md, "Tabs"): one this
  // tab's confirmed state does not hold yet, of another queue (a page of the same queue that
  // reloaded reported that queue's own updates). A drained slot also waits for this tab's own.
  tabOrder?.attach((q) => ({
    before(key, skip, applied) {
      // Waited for until the pushing replica holds it (`applied`: a drained slot's replica is
      // not this tab's; a trial's drain pushed on a state without it).
      const candidates: OrderKey[] = [];
      for (const [k, item] of order) {
        if (item.origin === undefined || foreign.get(item.from)?.q === q) continue;
        // Its tab reported it gone and this tab's state does not hold it: refused, discarded.
        const held = (sync.appliedSeq(item.origin) ?? -Infinity) >= item.seq!;
        if (!held && sync.revision >= (leaving.get(k) ?? Infinity)) continue;
        candidates.push({ queuedAt: item.at, origin: item.origin, id: item.seq! });
      }
      if (q !== queue) {
        for (const p of sync.pending) {
          if (!p.otherLog) candidates.push({ queuedAt: p.queuedAt, origin: p.origin, id: p.id });
        }
      }
      return earliestBefore(key, candidates, skip, applied);
    },
    onChange(listener) {
      listeners.add(listener);
      const stop = sync.subscribe(
        changesOnly(() => listener()),
        { optimistic: q !== queue },
      );
      return () => (listeners.delete(listener), stop());
    },
  }));

  const interleaved = interleave(
    () => sync.pending,
    (p) =>
      check(sync.clientId, { id: p.id, o: p.origin, c: p.command!, a: p.args, at: p.queuedAt }),
  );

  // The view: the items shown in push order, on this tab's optimistic state, or all of them with
  // this tab's own on its confirmed state (then the core's view is not computed at all). Each
  // call costs what changed since the last (mixed-view.ts); the items' order costs a sort of an
  // array sorted already but for what arrived, no command runs.
  const view = (): Immutable<S> => {
    for (const [key, until] of leaving) {
      if (sync.revision < until) continue;
      leaving.delete(key);
      order.delete(key);
    }
    if (order.size === 0) {
      incremental.reset();
      return sync.optimisticState;
    }
    const started = performance.now();
    const revision = sync.revision;
    const others = [...order.values()].filter(shown).sort(byQueueOrder);
    const mixed = interleaved(others);
    const state = mixed
      ? incremental.run(sync.state, mixed, revision)
      : incremental.run(sync.optimisticState, others, revision);
    lastCostMs = performance.now() - started;
    return state;
  };

  const shared = new Proxy(sync, {
    get(target, prop, receiver) {
      if (prop === "optimisticState") return view();
      if (prop === "pendingInOtherTabs") {
        view(); // lets the items whose tab's report left them go (`leaving`)
        return [...order.values()]
          .filter(shown)
          .sort(byQueueOrder)
          .map((i) => ({ tab: i.from, command: i.name, args: i.args, queuedAt: i.at }));
      }
      if (prop === "subscribe") {
        return (
          listener: (state: Immutable<S>, revision: number) => void,
          options?: { optimistic?: boolean },
        ) => {
          if (!options?.optimistic) return target.subscribe(listener, options);
          // After a costly view (other tabs' edits run again on a new state), the next call
          // waits a few times that cost, so a burst of entries costs one view per wait, not one
          // per entry (a trial: two tabs making 1,000 edits each kept a page busy for a minute).
          // The core's own view is not computed for it (`changesOnly`): this one replaces it.
          // Changes in one task (reports of several tabs, an entry) make one call, in a microtask.
          let timer: ReturnType<typeof setTimeout> | undefined;
          let queued = false;
          const now = () => {
            timer = undefined;
            queued = false;
            if (!closed) listener(view(), target.revision);
          };
          let closed = false;
          const call = changesOnly(() => {
            if (timer !== undefined || queued) return;
            const wait = notifyDelayMs(lastCostMs); // as the core's view spaces its own
            if (wait > 0) timer = setTimeout(now, wait);
            else {
              queued = true;
              queueMicrotask(now);
            }
          });
          listeners.add(call);
          const stop = target.subscribe(call, options);
          return () => {
            closed = true;
            clearTimeout(timer);
            listeners.delete(call);
            stop();
          };
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    sync: shared,
    stop() {
      stopped = true;
      stops.forEach((s) => s());
      // Its durable updates stay stored: the tab that takes its queue over pushes them, and its
      // report replaces this one; till then the other tabs keep showing them (before, a tab
      // closed while offline took its edits out of every other tab's view until its queue was
      // taken over, seconds later). Those held in memory only leave with it.
      let kept: typeof sync.pending = [];
      try {
        kept = sync.pending.filter((p) => p.command !== undefined && p.durable && !p.otherLog);
      } catch {
        // closed
      }
      seq += 1;
      const revision = kept.length > 0 ? sync.revision : 0;
      send({ t: "pending", from: tabId, q: queue, seq, revision, ops: kept.map(wire) });
      channel.close();
    },
  };
}
