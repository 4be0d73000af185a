import { StateSyncError } from "@statesync/core";
import { afterFreeTime } from "../free-time-wait.js";
import type { PendingCalls } from "./calls.js";
import { checkAnswer, type Op } from "./op-schemas.js";
import { notSent, type TabMessage } from "./protocol.js";
import type { TabConnection } from "./tab-status.js";

/** What {@link LeaderStates} needs of its `TabLog`. */
export interface LeaderStatesHost {
  readonly tabId: string;
  /** The calls this tab sent and waits for. */
  readonly calls: PendingCalls;
  closed(): boolean;
  /** True while this tab leads. */
  leading(): boolean;
  /** `op` run on this tab's own log while it leads; undefined while it does not. */
  runOwn(op: Op, args: unknown[], signal?: AbortSignal): Promise<unknown> | undefined;
  /** The tab the token names while it is alive and not this one, else undefined. */
  leader(): string | undefined;
  post(message: TabMessage): void;
  /** A leader was heard to be online that was not before: the tab's status may change. */
  heardOnline(): void;
}

/** How long a follower waits for the leader's answer to anything but an append, ms. */
const CALL_MS = 10_000;
/** How often a call that writes nothing is sent again after its leader went away. */
const MAX_RESENDS = 2;

/**
 * What a follower tab knows of the leading tabs' connections (docs/offline.md, "Tabs"), from
 * their beats (`online`, `connecting`) and their answers, and its calls through them.
 *
 * A call that finds no leader alive (the tabs are still electing one: a page that just opened,
 * a leader that just left) or a leader still making its first connection (none of its attempts
 * failed yet) waits for that to settle rather than fail at once: its `UNAVAILABLE` made the
 * replica say `offline` before anything had failed (a new user's trial: every page load with
 * `snapshots: false` said "offline" for a moment). A leader that says its connection failed, or
 * was lost, fails a call at once as before (`offline` is then true). So does a wait that lasts
 * the call's time limit (no tab could take the lead).
 */
export class LeaderStates {
  /** Per leading tab: whether its log is online (its last beat, or an answer since). */
  private readonly online = new Map<string, boolean>();
  /** Leading tabs whose last beat said their first connection is still being made. */
  private readonly connecting = new Set<string>();
  private readonly waiters = new Set<() => void>();

  constructor(private readonly tab: LeaderStatesHost) {}

  /** A beat from `tabId`. */
  heardBeat(tabId: string, online: boolean, connecting: boolean): void {
    this.online.set(tabId, online);
    if (connecting && !online) this.connecting.add(tabId);
    else this.connecting.delete(tabId);
    this.changed();
  }

  /**
   * `tabId`'s connection as this tab knows it (`TabStatus`): `handover` while nothing was heard
   * of it yet or its last beat said its first connection is still being made.
   */
  connectionOf(tabId: string): TabConnection {
    const online = this.online.get(tabId);
    if (online === true) return "online";
    return online === undefined || this.connecting.has(tabId) ? "handover" : "offline";
  }

  /** Something a waiting call may wait for changed (a beat, a `bye`, a lead taken, time). */
  changed(): void {
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * Calls `op` on the log of the leader: this tab's own while it leads; else asks the leader,
   * waits at most `timeoutMs` (default 10 s) for its answer and checks it (`checkAnswer`: malformed,
   * `VALIDATION`; for an append `UNAVAILABLE`, outcome unknown). Fails at once `UNAVAILABLE`
   * (`notSent`) while the leader is alive without a connection it had, or said why it has none.
   */
  async call(op: Op, args: unknown[], timeoutMs = CALL_MS, signal?: AbortSignal): Promise<unknown> {
    for (let resend = 0; ; resend++) {
      await this.until(() => this.decided(), timeoutMs, signal);
      if (this.tab.closed()) throw new StateSyncError("CLOSED", "the log was closed");
      const own = this.tab.runOwn(op, args, signal);
      if (own) return own;
      const to = this.tab.leader();
      if (to === undefined || this.online.get(to) === false) {
        throw notSent("no tab holds a connection to the server now");
      }
      const send = (id: string) =>
        this.tab.post({ t: "req", id, from: this.tab.tabId, to, op, args });
      let value: unknown;
      try {
        value = await this.tab.calls.start(to, send, timeoutMs, signal);
      } catch (e) {
        // A leader that went away before it answered (a crashed page's token names a tab that
        // never beats): a call that writes nothing goes to the next one (a page opened then
        // said `offline` first). An append fails, outcome unknown, as before.
        const gone = e instanceof StateSyncError && e.details.leaderGone === true;
        if (gone && op !== "append" && resend < MAX_RESENDS) continue;
        throw e;
      }
      // Its log was reachable: a follower whose first calls the leader answered before its
      // first beat said `offline` once open (the engine reads the log's status then).
      if (!this.online.has(to)) {
        this.online.set(to, true);
        this.tab.heardOnline();
      }
      return checkAnswer(op, args, value);
    }
  }

  /**
   * True when a call can be run, sent or failed now: this tab leads (or closed), or another
   * leads and is alive, unless its first connection is still being made.
   */
  private decided(): boolean {
    if (this.tab.closed() || this.tab.leading()) return true;
    const to = this.tab.leader();
    if (to === undefined) return false;
    return this.online.get(to) !== false || !this.connecting.has(to);
  }

  /**
   * Resolves once `ready()` holds (checked now and at each {@link changed}), or `timeoutMs` of
   * this tab's free time passed (the caller then decides as before). Rejects `UNAVAILABLE`
   * (`notSent`, `aborted`) once `signal` aborts: nothing was sent.
   */
  private until(ready: () => boolean, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const end = () => {
        this.waiters.delete(check);
        cancel();
        signal?.removeEventListener("abort", abort);
      };
      const check = () => {
        if (!ready()) return;
        end();
        resolve();
      };
      const abort = () => {
        end();
        reject(
          new StateSyncError("UNAVAILABLE", "the call was not sent: it was aborted", {
            details: { notSent: true, aborted: true },
          }),
        );
      };
      const cancel = afterFreeTime(timeoutMs, () => {
        end();
        resolve();
      });
      this.waiters.add(check);
      if (signal?.aborted) abort();
      else signal?.addEventListener("abort", abort);
    });
  }
}
