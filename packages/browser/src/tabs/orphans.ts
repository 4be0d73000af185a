import {
  isStateSyncError,
  pendingQueue,
  type PendingLoad,
  type PendingQueue,
  type PendingQueueSetup,
  type PendingStore,
  type StateSynchronizer,
} from "@statesync/core";
import { SLOTS } from "./queue-slot.js";

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
  /** Opens a replica that holds the queue `pending` (on the tab's shared log, saving nothing). */
  open(pending: PendingQueueSetup): Promise<StateSynchronizer<any, any>>;
}

/** How often the leading tab looks for orphaned slots, ms. */
const EVERY_MS = 10_000;

/**
 * Pushes the queues that tabs which died left behind (docs/offline.md, "Tabs"): a slot's queue is
 * taken over by the next tab that opens while it is the first free slot, so with fewer tabs open
 * than died, some would wait. The leading tab looks every 10 s (and soon after it opens): a free
 * slot with records is opened by a second, short-lived replica of this tab, which pushes it
 * (`flush`) and closes. The slot's lock keeps a tab that opens meanwhile from taking it twice.
 * Updates queued for another log are set aside by that replica (docs/offline.md, "One log"):
 * the drain goes on with the next slot, and opens that one again only once its records change
 * (another tab took it over, rebound or cleared them), not every round, each of which would
 * report them again. Returns a function that stops it.
 */
export function drainOrphanedSlots(o: OrphanDrainOptions): () => void {
  let stopped = false;
  let running = false;
  let current: StateSynchronizer<any, any> | undefined;
  /** Slots whose records were all set aside for another log, by the seqs they held. */
  const setAside = new Map<string, string>();
  const run = async () => {
    if (stopped || running || !o.active()) return;
    running = true;
    try {
      for (let n = 0; n < SLOTS && !stopped; n++) {
        const owner = `${o.owner}-${n}`;
        if (owner === o.own) continue;
        let queue;
        try {
          queue = await o.store.open(o.key, owner);
        } catch (e) {
          if (isStateSyncError(e, "QUEUE_LOCKED")) continue;
          return;
        }
        const loaded = await queue.load();
        const damaged = (loaded.damaged?.length ?? 0) > 0;
        const seqs = loaded.records.map((r) => r.seq).join(",");
        const same = !damaged && setAside.get(owner) === seqs;
        if ((loaded.records.length === 0 && !damaged) || same || stopped || !queue.durable) {
          await queue.close();
          continue;
        }
        // The replica gets this load, damaged records included (it reports them): a second
        // load would not hand those back.
        const store = { open: async () => loadedOnce(queue, loaded) };
        const sync = await o.open(pendingQueue({ owner, store }));
        current = sync;
        try {
          await sync.flush();
          setAside.delete(owner);
        } catch (e) {
          if (!isStateSyncError(e, "LOG_REPLACED") || e.details.otherLog !== true) throw e;
          setAside.set(owner, sync.pending.map((u) => u.id).join(","));
        } finally {
          current = undefined;
          await sync.close();
          await queue.close();
        }
      }
    } catch {
      // the next round tries again (the replica reported what failed)
    } finally {
      running = false;
    }
  };
  const first = setTimeout(() => void run(), 3_000);
  const timer = setInterval(() => void run(), EVERY_MS);
  return () => {
    stopped = true;
    clearTimeout(first);
    clearInterval(timer);
    void current?.close();
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
