import type { Immutable } from "immer";
import type { PendingUpdate } from "./pending-op.js";

const NONE: readonly OtherTabPending[] = Object.freeze([]);
/** `pendingInOtherTabs` of a replica that shares no tabs. */
export const noOtherTabs = (): readonly OtherTabPending[] => NONE;

/**
 * Another tab's pending update that this replica shows in `optimisticState` (browser tabs of one
 * profile sharing one replica: `@statesync/browser`, docs/offline.md "Tabs"). Not sent yet, or
 * sent and not yet read back here.
 */
export interface OtherTabPending {
  /** The tab that queued it (an opaque id, stable while that tab is open). */
  readonly tab: string;
  /** The named command and its arguments, as that tab reported them (checked here). */
  readonly command: string;
  readonly args: unknown;
  /** When that tab queued it, ms since the epoch (its clock). */
  readonly queuedAt: number;
}

/**
 * The optimistic view and the pending queue of a replica (docs/offline.md). `discard`,
 * `clearPending` and `rebindPending` take effect one at a time, in call order (each once those
 * called before it have settled). After `close()` the replica holds no queue: they and `flush`
 * reject `CLOSED`, and `optimisticState`, `pending`, `pendingCount` keep what it held then.
 */
export interface PendingApi<S> {
  /**
   * The optimistic view (docs/offline.md): `state` with every pending update of this replica
   * applied on top, in queue order. Equal to `state` when nothing is pending. A pending update
   * that throws here is left out (it is refused when pushed), and so is one set aside for
   * another log (`PendingUpdate.otherLog`).
   */
  readonly optimisticState: Immutable<S>;
  /** This replica's pending updates, in queue order (empty without a `pending` option). */
  readonly pending: readonly PendingUpdate[];
  /** How many updates are pending (`pending.length`, without building the list). */
  readonly pendingCount: number;
  /**
   * Other tabs' pending updates shown in `optimisticState`, in the order the tabs' queues push
   * them in (`queuedAt`; docs/offline.md "Tabs"): what a page marks as not sent yet besides `pending` (before, a tab counted
   * only its own: stop 25's trial). A new list on each read; subscribers with
   * `{ optimistic: true }` are called when it changes. Empty for a replica that shares no tabs.
   */
  readonly pendingInOtherTabs: readonly OtherTabPending[];
  /**
   * The highest `id` of the queue session `origin` (`PendingUpdate.origin`, of this replica or
   * another one's) whose update the confirmed `state` includes, or undefined when it includes
   * none (or the session is forgotten: the table of applied origins keeps the 2,000 applied most
   * recently). A session pushes in `id` order, so its updates with an `id` at most this one are
   * in `state` (docs/offline.md, "Identity"): what another tab's preview of pending updates
   * leaves out. Throws `VALIDATION` for an `origin` that is not a string.
   */
  appliedSeq(origin: string): number | undefined;
  /**
   * Pushes the queue now (ends a backoff) and resolves once it is empty; rejects `CLOSED` or the
   * stall error when it never will be, and `LOG_REPLACED` once only updates set aside for
   * another log are left (`PendingUpdate.otherLog`). Resolves at once without a `pending` option.
   */
  flush(): Promise<void>;
  /**
   * Removes the pending update `id` unless it is being appended right now; its caller rejects
   * `ABORTED`. Resolves true when it was removed (and its record deleted). Also removes an update
   * set aside for another log. Rejects `CLOSED` after `close()`, `VALIDATION` for an id that is
   * not a positive integer.
   */
  discard(id: number): Promise<boolean>;
  /**
   * Discards every pending update queued before the call and not being appended (a user logs
   * out), those set aside for another log included; resolves to how many. Rejects `CLOSED` after
   * `close()`: call it before, or clear the queue through its store (docs/offline.md, "Control").
   */
  clearPending(): Promise<number>;
  /**
   * Pushes the updates set aside for another log into this replica's log, on purpose
   * (docs/offline.md, "One log"): they were queued for a log that is gone or elsewhere (a
   * `LOG_REPLACED` event named them, `pending` lists them with `otherLog`), and this binds them
   * to this log, stores that, and queues them again: each is run on this log's state (a rebase)
   * and committed once, or refused, like any queued update, after those already being sent.
   * Their first callers were told `LOG_REPLACED`: follow them with `pending`, the `"refused"`
   * and `"drained"` events. Resolves to how many, once they are queued again (a `clearPending()`
   * called after it then counts them too); 0 when none is set aside (or no `pending` option).
   * Rejects `CLOSED` or the stall error.
   */
  rebindPending(): Promise<number>;
}
