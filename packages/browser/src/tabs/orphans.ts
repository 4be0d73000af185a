import {
  earliestBefore,
  isStateSyncError,
  pendingQueue,
  type PendingLoad,
  type PendingQueue,
  type PendingQueueSetup,
  type PendingRecord,
  type PendingStore,
  type OrderKey,
  type PushOrder,
  type StateSynchronizer,
} from "@statesync/core";
import { SLOTS } from "./queue-slot.js";
import type { TabPushOrder } from "./tab-order.js";

/** Options of {@link drainOrphanedSlots}. */
export interface OrphanDrainOptions {
  readonly store: PendingStore;
  /** The state's snapshot key (the queues' key). */
  readonly key: string;
  /** The owner prefix (slots are `<owner>-<n>`) and the slot this tab holds. */
  readonly owner: string;
  readonly own: string;
  /** True while this tab should drain (it leads: one tab does it, not all). */
  active(): boolean;
  /**
   * True while the log can be reached (default: always). Offline, a slot is only read and shown,
   * not held: a replica pushing it would hold its lock until the server is back, and a tab
   * opening meanwhile would take another slot, its edits shown by no one (stop 26's trial).
   */
  online?(): boolean;
  /**
   * The name of the tabs' channels (`sharePendingAcrossTabs`): the slots' updates are reported
   * on `<channel>:pending` as that slot's queue, so every tab shows them until they are pushed
   * (before, the edits of tabs that all closed while offline showed nowhere until the server
   * was back: stop 26's trial). Not reported without it.
   */
  channel?: string;
  /**
   * The order the slots' queues push in among the tabs' (`TabPushOrder.of`): a drained slot's
   * updates do not overtake another tab's, this tab's included, queued before them (a trial: the
   * drain pushed a closed tab's whole slot ahead of the leading tab's earlier edits).
   */
  order?: TabPushOrder;
  /**
   * The identity of the log the tab follows (`LogInfo.identity`), when it can be read: a slot's
   * records bound to another log are then neither shown nor waited for (before, a new leading
   * tab showed them, and held the tabs' pushes, until its drain's replica set them aside).
   */
  identity?(): Promise<string>;
  /**
   * This tab's confirmed revision (default 0): a slot's updates withdrawn because the slot was
   * found empty leave the other tabs' views once they reach it (committed ones are in their
   * confirmed state by then).
   */
  revision?(): number;
  /** Opens a replica that holds the queue `pending` (on the tab's shared log, saving nothing). */
  open(pending: PendingQueueSetup): Promise<StateSynchronizer<any, any>>;
}

/** How often the leading tab looks for orphaned slots, ms. */
const EVERY_MS = 10_000;

/**
 * Pushes the queues that tabs which died left behind (docs/offline.md, "Tabs"): a slot's queue is
 * taken over by the next tab that opens while it is the first free slot, so with fewer tabs open
 * than died, some would wait. The leading tab looks every 10 s (and soon after it opens), at the
 * slots that have a queue (`PendingStore.owners`, where the store has it; else at each slot,
 * which creates its queue): a free slot with records is opened by a second, short-lived replica
 * of this tab, which pushes it
 * (`flush`) and closes; the slots found in one round are pushed at once, each in the tabs' order. The slot's lock keeps a tab that opens meanwhile from taking it twice.
 * Updates queued for another log are set aside by that replica (docs/offline.md, "One log"):
 * the drain goes on with the next slot, and opens that one again only once its records change
 * (another tab took it over, rebound or cleared them), not every round, each of which would
 * report them again. Returns a function that stops it.
 */
export function drainOrphanedSlots(o: OrphanDrainOptions): () => void {
  let stopped = false;
  let running = false;
  const current = new Set<StateSynchronizer<any, any>>();
  /** Slots whose records were all set aside for another log, by the seqs they held. */
  const setAside = new Map<string, string>();
  /**
   * Slots whose updates a tab may show: reported by this drain, or held by a tab (which reports
   * what it leaves behind when it closes). Found free and empty, such a slot is withdrawn once:
   * its updates were pushed, or cleared by the app (a logout), and no one else will say so
   * (before, an adversarial trial: cleared edits of a closed tab showed as "not sent yet" in
   * every tab for as long as it stayed open).
   */
  const mayShow = new Set<string>();
  const report = reporter(o.channel);
  const online = () => o.online?.() ?? true;
  /** Pushes one slot's loaded queue through a replica of its own; resolves once it is done. */
  const drain = async (
    owner: string,
    queue: PendingQueue,
    loaded: PendingLoad,
    slots: Map<string, () => OrderKey[]>,
  ) => {
    // The replica gets this load, damaged records included (it reports them): a second load
    // would not hand those back.
    const store = { open: async () => loadedOnce(queue, loaded) };
    const order = withSlots(o.order?.of(owner), () =>
      [...slots].flatMap(([other, keys]) => (other === owner ? [] : keys())),
    );
    let sync: StateSynchronizer<any, any>;
    try {
      sync = await o.open(pendingQueue({ owner, store, order }));
    } catch (e) {
      slots.delete(owner);
      await queue.close();
      throw e;
    }
    slots.set(owner, () =>
      sync.pending
        .filter((u) => !u.otherLog)
        .map((u) => ({ queuedAt: u.queuedAt, origin: u.origin, id: u.id })),
    );
    current.add(sync);
    try {
      const flushed = sync.flush();
      let settled = false;
      void flushed.then(
        () => (settled = true),
        () => (settled = true),
      );
      // Gone offline (or lost the lead) while pushing: let the slot go, its records stay.
      while (!settled && !stopped && o.active() && online()) await sleep(500);
      if (!settled) return;
      await flushed;
      setAside.delete(owner);
      report.show(owner, [], queue.origin, sync.revision);
    } catch (e) {
      if (!isStateSyncError(e, "LOG_REPLACED") || e.details.otherLog !== true) throw e;
      setAside.set(owner, sync.pending.map((u) => u.id).join(","));
      // Set aside for another log: shown nowhere, waited for by no tab (a trial: the tabs
      // showed them and waited 10 s for each before pushing their own).
      report.show(owner, [], queue.origin, sync.revision);
    } finally {
      slots.delete(owner);
      current.delete(sync);
      await sync.close();
      await queue.close();
    }
  };
  const run = async () => {
    if (stopped || running || !o.active()) return;
    running = true;
    const found: Array<[string, PendingQueue, PendingLoad]> = [];
    const identity = online() ? await o.identity?.().catch(() => undefined) : undefined;
    /** A record this log can take (one bound to another log is set aside by the replica). */
    const ours = (r: PendingRecord) =>
      identity === undefined || r.logIdentity === undefined || r.logIdentity === identity;
    try {
      // The slots that have a queue, where the store can say (`owners`, read only): opening a
      // slot creates its queue, and opening all 32 left a row for each in IndexedDB (a new
      // user's trial: one tab, an offline session). A slot this drain may have shown is looked
      // at whatever the store says (found empty, it is withdrawn).
      const used = o.store.owners && new Set(await o.store.owners(o.key));
      for (let n = 0; n < SLOTS && !stopped; n++) {
        const owner = `${o.owner}-${n}`;
        if (owner === o.own || (used && !used.has(owner) && !mayShow.has(owner))) continue;
        let queue;
        try {
          queue = await o.store.open(o.key, owner);
        } catch (e) {
          if (!isStateSyncError(e, "QUEUE_LOCKED")) break;
          mayShow.add(owner);
          continue;
        }
        const loaded = await queue.load();
        const damaged = (loaded.damaged?.length ?? 0) > 0;
        const empty = loaded.records.length === 0 && !damaged;
        if (empty && queue.durable && !stopped && mayShow.delete(owner)) {
          // Still holding the slot: a tab taking it next reports after this.
          report.show(owner, [], queue.origin, o.revision?.() ?? 0);
        }
        const seqs = loaded.records.map((r) => r.seq).join(",");
        const same = !damaged && setAside.get(owner) === seqs;
        if (empty || same || stopped || !queue.durable) {
          await queue.close();
          continue;
        }
        mayShow.add(owner);
        report.show(owner, loaded.records.filter(ours), queue.origin);
        if (!online()) {
          await queue.close(); // shown; pushed in a round once the server is back
          continue;
        }
        found.push([owner, queue, loaded]);
      }
    } catch {
      // the next round tries again (a store that failed says so through its own channel)
    }
    // All the slots at once, each in the tabs' order, which knows the others' updates from the
    // start (not from their reports, which arrive later): one slot's updates may wait for
    // another's (a re-check: slots drained one after the other waited 10 s on each other, then
    // one's edit was refused and an older rename won).
    const slots = new Map<string, () => OrderKey[]>();
    for (const [owner, queue, loaded] of found) {
      const keys = loaded.records.filter(ours).map((r) => ({
        queuedAt: r.queuedAt,
        origin: r.origin ?? queue.origin,
        id: r.seq,
      }));
      slots.set(owner, () => keys);
    }
    // The next round tries again what failed (the replicas reported it).
    await Promise.allSettled(found.map(([owner, q, loaded]) => drain(owner, q, loaded, slots)));
    running = false;
  };
  const first = setTimeout(() => void run(), 3_000);
  const timer = setInterval(() => void run(), EVERY_MS);
  return () => {
    stopped = true;
    clearTimeout(first);
    clearInterval(timer);
    report.close();
    for (const sync of current) void sync.close();
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Reports a slot's stored updates on `<channel>:pending` as the other tabs report theirs (the
 * whole list of its queue, `q` the slot: a tab that takes the slot replaces the report with its
 * own), or nothing without a channel.
 */
function reporter(channel: string | undefined) {
  const bc = channel === undefined ? undefined : new BroadcastChannel(`${channel}:pending`);
  let seq = 0;
  return {
    show(owner: string, records: readonly PendingRecord[], origin: string, revision = 0) {
      const ops = records.map((r) => ({
        id: r.seq,
        o: r.origin ?? origin,
        c: r.name,
        a: r.args,
        at: r.queuedAt,
      }));
      seq += 1;
      const from = `slot:${owner}`.slice(0, 64);
      try {
        bc?.postMessage({ t: "pending", from, q: owner, seq, revision, ops });
      } catch {
        // closed
      }
    },
    close: () => bc?.close(),
  };
}

/** `queue`, whose first `load()` answers `loaded` (what the drain loaded already). */
function loadedOnce(queue: PendingQueue, loaded: PendingLoad): PendingQueue {
  let first: PendingLoad | undefined = loaded;
  return {
    get durable() {
      return queue.durable;
    },
    get origin() {
      return queue.origin;
    },
    load() {
      const answer = first;
      first = undefined;
      return answer ? Promise.resolve(answer) : queue.load();
    },
    put: (record) => queue.put(record),
    delete: (seqs) => queue.delete(seqs),
    clear: () => queue.clear(),
    close: () => queue.close(),
  };
}

/**
 * `base` (the tabs' order of a slot), with the updates of the other slots drained in the same
 * round (`others`: their stored updates, then their replicas' pending ones) in front too.
 */
function withSlots(base: PushOrder | undefined, others: () => OrderKey[]): PushOrder {
  return {
    before(key, skip, applied) {
      const first = base?.before(key, skip, applied);
      return earliestBefore(key, [...(first ? [first] : []), ...others()], skip, applied);
    },
    onChange: (listener) => base?.onChange(listener) ?? (() => undefined),
  };
}
