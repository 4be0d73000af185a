import type { PendingStore } from "@statesync/core";

/**
 * `store`, its queues said durable (the drain leaves queues kept in memory alone), with its
 * `owners` when it has one (`MemoryPendingStore` does, as the IndexedDB store).
 */
export function durable(store: PendingStore): PendingStore {
  return {
    ...(store.owners ? { owners: (key: string) => store.owners!(key) } : {}),
    open: async (key, owner) => {
      const q = await store.open(key, owner);
      return {
        durable: true,
        get origin() {
          return q.origin;
        },
        load: () => q.load(),
        put: (r) => q.put(r),
        delete: (seqs) => q.delete(seqs),
        clear: () => q.clear(),
        close: () => q.close(),
      };
    },
  };
}
