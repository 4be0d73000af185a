import type { LogConnectionStatus } from "@statesync/core";
import { afterFreeTime } from "../free-time-wait.js";

/**
 * What a tab sees of the tabs' connection: the leader's log is `online`; it is `offline` (its
 * connection failed or was lost, as its beats or its own log say); or the connection is being
 * handed over: no leader is alive (the tabs elect one: a page that just opened, a leader that
 * left, closed or froze) or the leader makes its first connection (`connecting`: not online yet
 * during this lead, no attempt failed).
 */
export type TabConnection = "online" | "offline" | "handover";

/**
 * The longest a handover keeps the status a tab had, ms of this tab's free time (a follower's
 * call waits as long for it: `LeaderStates`); past it, `offline`.
 */
export const HANDOVER_MS = 10_000;

/**
 * A `TabLog`'s status (`online` / `offline`), from what it sees of the connection. A handover
 * keeps the status the tab had: before, every handover said `offline` for a moment (the leading
 * tab closed, and its followers said so until the next leader's connection was made), though
 * nothing had failed. Its end decides: the new leader online, or a connection attempt of its
 * that failed (a refused WebSocket: `offline` at once, as ever). A handover that does not end
 * within {@link HANDOVER_MS} (no tab takes the lead) says `offline`.
 */
export class TabStatus {
  private current: LogConnectionStatus = "offline";
  /** Cancels the bound of the handover under way, while the tab held `online` through one. */
  private cancelBound: (() => void) | undefined;
  private expired = false;
  /** A handover kept `online`: its end says `online` again (see {@link next}). */
  private held = false;

  /** `onExpired`: a handover outlasted {@link HANDOVER_MS} (seen again, it now says `offline`). */
  constructor(private readonly onExpired: () => void) {}

  get status(): LogConnectionStatus {
    return this.current;
  }

  /**
   * The status after `seen`: the new one when it changed, else undefined; and `online` again at
   * the end of a handover that kept `online`: the connection was replaced, and the replica checks
   * the log as after a reconnection (`RevisionedLog.watchStatus`: the log may have gone back
   * while the lead was handed over, a server restarted without its store, say).
   */
  next(seen: TabConnection): LogConnectionStatus | undefined {
    let next: LogConnectionStatus;
    let renewed = false;
    if (seen !== "handover") {
      renewed = this.held && seen === "online";
      this.stop();
      next = seen;
    } else if (this.expired || this.current !== "online") {
      next = "offline";
    } else {
      this.held = true;
      this.cancelBound ??= afterFreeTime(HANDOVER_MS, () => {
        this.cancelBound = undefined;
        this.expired = true;
        this.onExpired();
      });
      next = "online";
    }
    if (next === this.current && !renewed) return undefined;
    this.current = next;
    return next;
  }

  /** Ends the bound of a handover (it ended, or the tab closed). */
  stop(): void {
    this.cancelBound?.();
    this.cancelBound = undefined;
    this.expired = false;
    this.held = false;
  }
}
