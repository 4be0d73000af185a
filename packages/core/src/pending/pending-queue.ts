import type { Immutable } from "immer";
import { z } from "zod/v4";
import { StateSyncError } from "../errors.js";
import type { Replica } from "../engine/replica.js";
import { closedError, type StatusHub } from "../engine/status.js";
import type { CommandMap } from "../model.js";
import { OfflineQueue } from "./offline-queue.js";
import type { OfflineQueueParts } from "./queue-parts.js";
import { isPendingStoreLike, ownerSchema, type PendingStore } from "./pending-store.js";
import type { PushOrder } from "./push-order.js";

/**
 * What the synchronizer asks of its offline queue: the optimistic view, the pending updates and
 * their controls. {@link OfflineQueue} with a store; {@link noQueue} without one.
 */
export type PendingPart<S, C extends CommandMap<S>> = Pick<
  OfflineQueue<S, C>,
  | "enabled"
  | "durable"
  | "open"
  | "start"
  | "pending"
  | "count"
  | "enqueue"
  | "flush"
  | "discard"
  | "clear"
  | "rebind"
  | "close"
> & {
  readonly view: {
    readonly state: Immutable<S>;
    subscribe(listener: (state: Immutable<S>, revision: number) => void): () => void;
  };
};

/**
 * The `pending` option of `createSynchronizer`, made by {@link pendingQueue}: where the queue is
 * stored, whose it is, and the queue's code (so an app without a queue does not bundle it).
 */
export interface PendingQueueSetup {
  readonly store: PendingStore;
  readonly owner: string;
  /** The updates of other queues this queue's must not overtake (push-order.ts); default none. */
  readonly order?: PushOrder | undefined;
  /** Internal: builds the queue from the synchronizer's parts. */
  readonly create: <S, C extends CommandMap<S>>(
    parts: OfflineQueueParts<S, C>,
  ) => PendingPart<S, C>;
}

const setupSchema = z.strictObject({
  store: z.custom<PendingStore>(isPendingStoreLike, "store must be a PendingStore"),
  owner: ownerSchema,
  order: z
    .custom<PushOrder>(
      (v) =>
        typeof v === "object" &&
        v !== null &&
        typeof (v as PushOrder).before === "function" &&
        typeof (v as PushOrder).onChange === "function",
      "order must be a PushOrder",
    )
    .optional(),
});

/**
 * The offline queue for `createSynchronizer({ pending: pendingQueue({ store, owner }) })`
 * (docs/offline.md): pending updates kept in `store` (`MemoryPendingStore`, `FilePendingStore`,
 * `IndexedDbPendingStore`, or any `PendingStore`) under the stable name `owner` (1-64 printable
 * ASCII characters, no spaces or `/`; one synchronizer at a time holds a state's queue of one
 * owner, `QUEUE_LOCKED` for a second). `order`: other queues' updates not to be overtaken (the
 * browser's tabs: docs/offline.md). `@statesync/node`'s and `@statesync/browser`'s
 * `openSynchronizer` build it for you. Throws `VALIDATION` for a bad store or owner.
 */
export function pendingQueue(options: {
  store: PendingStore;
  owner: string;
  order?: PushOrder | undefined;
}): PendingQueueSetup {
  const parsed = setupSchema.safeParse(options);
  if (!parsed.success) {
    throw new StateSyncError(
      "VALIDATION",
      `invalid pendingQueue options: ${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  return {
    store: options.store,
    owner: options.owner,
    order: options.order,
    create: (parts) => new OfflineQueue(parts),
  };
}

/**
 * The synchronizer's queue part without a `pending` option: updates bypass it (`enabled` false),
 * the optimistic view is the confirmed state, nothing is ever pending. Its calls reject `CLOSED`
 * after `close()`, as the queue's do.
 */
export function noQueue<S, C extends CommandMap<S>>(
  replica: Replica<S, C>,
  status: StatusHub,
): PendingPart<S, C> {
  const none = (): never => {
    throw new StateSyncError("VALIDATION", "no pending queue: give pendingQueue({ store, owner })");
  };
  const nothing = <T>(value: T) =>
    status.closed ? Promise.reject<T>(closedError()) : Promise.resolve(value);
  return {
    enabled: false,
    durable: false,
    view: {
      get state() {
        return replica.state;
      },
      subscribe: (listener) => replica.subscribe(listener),
    },
    open: none,
    start: () => undefined,
    pending: [],
    count: 0,
    enqueue: none,
    flush: () => nothing(undefined),
    discard: () => nothing(false),
    clear: () => nothing(0),
    rebind: () => nothing(0),
    close: () => Promise.resolve(),
  };
}
