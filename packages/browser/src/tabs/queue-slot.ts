import {
  isStateSyncError,
  pendingQueue,
  StateSyncError,
  type PendingQueueSetup,
  type PendingStore,
} from "@statesync/core";

/** Queue slots a page tries (`<owner>-0` ... `<owner>-31`). */
export const SLOTS = 32;

/**
 * Takes the first free queue slot of `owner` for the state `key` (docs/offline.md, "Tabs"): each
 * tab is a replica with its own queue, and one queue is held by one replica at a time, so tabs
 * take `<owner>-0`, `<owner>-1`, ... A tab that reloads or crashes frees its slot (the queue's lock
 * is a Web Lock), and the next tab to open takes it with the updates it holds, which it then
 * pushes. Resolves to the engine's `pending` option: the owner name taken and a store that hands
 * the engine that open queue.
 * Rejects `QUEUE_LOCKED` when every slot is taken, or what the store's `open` rejects.
 */
export async function openQueueSlot(
  store: PendingStore,
  key: string,
  owner: string,
): Promise<PendingQueueSetup> {
  for (let n = 0; n < SLOTS; n++) {
    const name = `${owner}-${n}`;
    try {
      const queue = await store.open(key, name);
      return pendingQueue({
        owner: name,
        store: {
          open: async () => queue,
          close: async () => {
            await queue.close();
            await store.close?.();
          },
        },
      });
    } catch (e) {
      if (!isStateSyncError(e, "QUEUE_LOCKED")) throw e;
    }
  }
  throw new StateSyncError("QUEUE_LOCKED", `all ${SLOTS} queue slots of ${owner} are taken`);
}
