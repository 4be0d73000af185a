import { pendingOwnerSchema, type PendingStore } from "@statesync/core";
import type { PendingQueueWarning } from "./pending-warning.js";
import type { drainOrphanedSlots } from "./tabs/orphans.js";
import type { openQueueSlot } from "./tabs/queue-slot.js";
import type { sharePendingAcrossTabs } from "./tabs/shared-pending.js";
import type { TabPushOrder } from "./tabs/tab-order.js";

/**
 * What `offlineQueue` (`@statesync/browser/offline`) hands `openSynchronizer`: the owner prefix,
 * the store, and the queue's code, which `openSynchronizer` imports only as types so that an app
 * without the queue does not bundle it. Build it with `offlineQueue`, not by hand.
 */
export interface OfflineQueueSetup {
  readonly owner: string;
  /**
   * The store the queue slots are taken in (called once per `openSynchronizer`); a store built
   * here reports its fallback to memory to `onWarning`, the synchronizer's warning channel.
   */
  store(onWarning: (warning: PendingQueueWarning) => void): PendingStore;
  readonly openQueueSlot: typeof openQueueSlot;
  readonly drainOrphanedSlots: typeof drainOrphanedSlots;
  readonly sharePendingAcrossTabs: typeof sharePendingAcrossTabs;
  /** A tab's push order among the other tabs' queues, given to its queue and then to the sharing. */
  tabPushOrder(): TabPushOrder;
}

/**
 * The owner prefix of `offlineQueue`: an owner's characters (core's `pendingOwnerSchema`, the
 * words Node's `pending.owner` uses) and at most 61 of them, since each tab's queue is named
 * `<owner>-<n>`, an owner of at most 64. Before, `""` passed (the queues were `-0`, `-1`, ...).
 */
export const ownerPrefixSchema = pendingOwnerSchema.max(
  61,
  "an owner prefix is at most 61 characters: each tab's queue is <owner>-<n>, an owner of at most 64",
);
