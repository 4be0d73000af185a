import {
  isStateSyncError,
  pendingQueue,
  StateSyncError,
  type PendingQueueSetup,
  type PendingStore,
} from "@statesync/core";
import type { TabPushOrder } from "./tab-order.js";

/** Queue slots a page tries (`<owner>-0` ... `<owner>-31`). */
export const SLOTS = 32;

/**
 * Takes the first free queue slot of `owner` for the state `key` (docs/offline.md, "Tabs"): each
 * tab is a replica with its own queue, and one queue is held by one replica at a time, so tabs
 * take `<owner>-0`, `<owner>-1`, ... A tab that reloads or crashes frees its slot (the queue's lock
 * is a Web Lock), and the next tab to open takes it with the updates it holds, which it then
 * pushes. A tab that reloads first waits up to 3 s for the slot it held (remembered in
 * `sessionStorage`): the page that left may keep its lock a moment longer, and another slot
 * would not show the tab's own queued edits (a duplicated tab, which copies `sessionStorage`,
 * may so wait 3 s before it takes a free slot). Resolves to the engine's `pending` option: the
 * owner name taken, a store that hands the engine that open queue, and the order of that queue
 * among the other tabs' (`order.of`: `TabPushOrder`).
 * Rejects `QUEUE_LOCKED` when every slot is taken, or what the store's `open` rejects.
 */
export async function openQueueSlot(
  store: PendingStore,
  key: string,
  owner: string,
  retakeMs = RETAKE_MS,
  order?: TabPushOrder,
): Promise<PendingQueueSetup> {
  const memo = `statesync-queue-slot:${key}:${owner}`;
  const take = async (n: number): Promise<PendingQueueSetup> => {
    const name = `${owner}-${n}`;
    const queue = await store.open(key, name);
    remember(memo, n);
    return pendingQueue({
      owner: name,
      order: order?.of(name),
      store: {
        open: async () => queue,
        close: async () => {
          await queue.close();
          await store.close?.();
        },
      },
    });
  };
  const previous = recall(memo);
  if (previous !== undefined) {
    // This tab held that slot before it reloaded: the page that left may hold its lock a moment
    // longer (seen on a loaded machine), and the next free slot would not show this tab's own
    // queued edits after the reload.
    const until = Date.now() + retakeMs;
    for (let wait = 50; ; wait = Math.min(2 * wait, 500)) {
      try {
        return await take(previous);
      } catch (e) {
        if (!isStateSyncError(e, "QUEUE_LOCKED")) throw e;
      }
      if (Date.now() >= until) break;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
  for (let n = 0; n < SLOTS; n++) {
    try {
      return await take(n);
    } catch (e) {
      if (!isStateSyncError(e, "QUEUE_LOCKED")) throw e;
    }
  }
  throw new StateSyncError("QUEUE_LOCKED", `all ${SLOTS} queue slots of ${owner} are taken`);
}

/** How long a reloaded tab waits for the slot it held, ms. */
const RETAKE_MS = 3_000;

/** `sessionStorage` (per tab, kept across reloads), where the page may use it. */
function tabStorage(): Pick<Storage, "getItem" | "setItem"> | undefined {
  try {
    return (globalThis as { sessionStorage?: Storage }).sessionStorage;
  } catch {
    return undefined; // storage denied (sandboxed frame, privacy settings)
  }
}

function remember(memo: string, slot: number): void {
  try {
    tabStorage()?.setItem(memo, String(slot));
  } catch {
    // full or denied: the tab takes the first free slot after a reload
  }
}

function recall(memo: string): number | undefined {
  let text: string | null | undefined;
  try {
    text = tabStorage()?.getItem(memo);
  } catch {
    return undefined;
  }
  const n = Number(text ?? NaN);
  return Number.isInteger(n) && n >= 0 && n < SLOTS ? n : undefined;
}
