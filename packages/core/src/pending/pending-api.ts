import type { Immutable } from "immer";
import type { PendingUpdate } from "./pending-op.js";

/** The optimistic view and the pending queue of a replica (docs/offline.md). */
export interface PendingApi<S> {
  /**
   * The optimistic view (docs/offline.md): `state` with every pending update of this replica
   * applied on top, in queue order. Equal to `state` when nothing is pending. A pending update
   * that throws here is left out (it is refused when pushed).
   */
  readonly optimisticState: Immutable<S>;
  /** This replica's pending updates, in queue order (empty without a `pending` option). */
  readonly pending: readonly PendingUpdate[];
  /** How many updates are pending (`pending.length`, without building the list). */
  readonly pendingCount: number;
  /**
   * Pushes the queue now (ends a backoff) and resolves once it is empty; rejects `CLOSED` or the
   * stall error when it never will be. Resolves at once without a `pending` option.
   */
  flush(): Promise<void>;
  /**
   * Removes the pending update `id` unless it is being appended right now; its caller rejects
   * `ABORTED`. Resolves true when it was removed (and its record deleted).
   */
  discard(id: number): Promise<boolean>;
  /** Discards every pending update not being appended (a user logs out); resolves to how many. */
  clearPending(): Promise<number>;
}
