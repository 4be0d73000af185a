/**
 * `@statesync/browser/offline`: the offline queue of `openSynchronizer` (docs/offline.md), as
 * an option built here: `openSynchronizer({ ..., pending: offlineQueue({ owner: "todos" }) })`.
 * It lives in an entry point of its own so that an app without the queue does not bundle its
 * code (the IndexedDB store, the queue slots, the drain of dead tabs' queues, the sharing of
 * pending edits across tabs): `openSynchronizer` reaches it only through the option (README,
 * "Bundle size"). It is loaded with the page, not on demand, so a page that opens offline has it.
 */
import { isPendingStoreLike, StateSyncError, type PendingStore } from "@statesync/core";
import { z } from "zod/v4";
import { IndexedDbPendingStore } from "./indexeddb-pending-store.js";
import { ownerPrefixSchema, type OfflineQueueSetup } from "./offline-setup.js";
import { PendingQueueWarning } from "./pending-warning.js";
import { drainOrphanedSlots } from "./tabs/orphans.js";
import { openQueueSlot } from "./tabs/queue-slot.js";
import { sharePendingAcrossTabs } from "./tabs/shared-pending.js";
import { TabPushOrder } from "./tabs/tab-order.js";

export type { OfflineQueueSetup } from "./offline-setup.js";
export { PendingQueueWarning } from "./pending-warning.js";

/** Options of {@link offlineQueue}. */
export interface OfflineQueueOptions {
  /**
   * The queue's owner prefix: each tab holds the first free slot `<owner>-<n>` (1-61 printable
   * ASCII characters, no spaces or `/`). Default `"browser"`.
   */
  owner?: string;
  /**
   * Where the queues are stored. Default: a new `IndexedDbPendingStore` (closed with the
   * replica) whose fallback to memory goes to `openSynchronizer`'s `onWarning` as a
   * `PendingQueueWarning`. A store given here reports through its own options.
   */
  store?: PendingStore;
}

/**
 * Strict, in Node's words (its `pending: { owner, store? }`): before, `owner: ""` opened queues
 * named `-0`, `-1`, ... and a typo (`ownr`) left the default owner in silence.
 */
const optionsSchema = z.strictObject({
  owner: ownerPrefixSchema.optional(),
  store: z.custom<unknown>(isPendingStoreLike, "store must be a PendingStore").optional(),
});

/**
 * The `pending` option of `openSynchronizer` that turns the offline queue on: updates made while
 * the server is away are stored (IndexedDB by default), shown at once in `optimisticState`, and
 * pushed in order, exactly once, when it is back, also after a reload (docs/offline.md).
 * Throws `VALIDATION` ("invalid offlineQueue options: ...", naming the option) for an owner that is
 * not 1-61 printable ASCII characters without spaces or `/`, a store that is no `PendingStore`
 * (an object with `open`), or an unknown key.
 */
export function offlineQueue(options: OfflineQueueOptions = {}): OfflineQueueSetup {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new StateSyncError(
      "VALIDATION",
      `invalid offlineQueue options: ${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  const { owner = "browser", store } = options;
  return {
    owner,
    store: (onWarning) =>
      store ??
      new IndexedDbPendingStore({
        onWarning: (cause) => onWarning(new PendingQueueWarning(cause)),
      }),
    openQueueSlot,
    drainOrphanedSlots,
    sharePendingAcrossTabs,
    tabPushOrder: () => new TabPushOrder(),
  };
}
