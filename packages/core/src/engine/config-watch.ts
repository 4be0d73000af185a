import { isStateSyncError, type StateSyncError } from "../errors.js";
import type { LogInfo, RevisionedLog } from "../log.js";
import type { StatusHub } from "./status.js";

/** With a working change notice, periodic checks are this many times rarer. */
export const NOTIFIED_INTERVAL_FACTOR = 10;

/** A notice is followed by a check after a random wait of up to this many ms. */
export const NOTICE_JITTER_MS = 2_000;

/**
 * Watches the log's configuration while the replica is connected (issue 10, case 5): an operator
 * may set limits that drop history (`max_msgs`, `max_age`, a discard policy, ...) on a stream
 * that live replicas use; `RevisionedLog.info()` checks the configuration (`STREAM_CONFIG` when
 * it can drop history). A check runs:
 * - after every (re)connection (the opener calls {@link check}): notices sent while the replica
 *   was away are lost;
 * - when the log says its configuration changed (`RevisionedLog.watchConfig`; JetStream: the
 *   stream-update advisory), after a random wait of up to {@link NOTICE_JITTER_MS}, so that
 *   10,000 followers of one stream spread their `info()` requests over two seconds;
 * - periodically, at a jittered interval (a third either way) around `intervalMs` (default
 *   45 s), or {@link NOTIFIED_INTERVAL_FACTOR} times that (7.5 min by default) while the notices
 *   work: they cover every edit made while connected, and the rare check only guards against a
 *   notice the server never sent (a cluster's leader change, say). A log without notices, or
 *   whose notices are denied (`onUnavailable`: falls back silently), is polled at `intervalMs`.
 *
 * A problem is reported as an `"error"` event once per distinct message, and makes the replica
 * not `writable` (the log refuses appends on such a stream) until a check passes again; nothing
 * stops: the replica goes on following.
 *
 * Invariants: at most one check runs at a time (a notice during a check runs one more after
 * it); at most one timer is pending; nothing runs after `stop()`.
 */
export class ConfigWatch {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerDue = 0;
  private running = false;
  private again = false;
  private stopped = false;
  private lastReported: string | undefined;
  private notified = false;
  private unwatch: (() => void) | undefined;
  /** Hears the log's info of each check that passed (`writeBackWhenPurged`). */
  onChecked: ((info: LogInfo) => void) | undefined;

  /** `intervalMs`: mean time between periodic checks without notices (0: none). */
  constructor(
    private readonly log: RevisionedLog,
    private readonly status: StatusHub,
    private readonly intervalMs: number,
  ) {}

  /** Starts listening to the log's notices, if it has them (before the first connection). */
  start(): void {
    if (this.stopped || this.unwatch || typeof this.log.watchConfig !== "function") return;
    this.notified = true;
    try {
      this.unwatch = this.log.watchConfig({
        onChange: () => this.soon(Math.random() * NOTICE_JITTER_MS),
        onUnavailable: () => {
          if (!this.notified) return;
          this.notified = false;
          // A rare timer set while the notices were relied on gives way to the periodic one.
          const latest = this.intervalMs * 1.33;
          if (this.timer !== undefined && this.timerDue - Date.now() > latest) this.schedule();
        },
      });
    } catch {
      this.notified = false; // a closed log: the opener reports what matters
    }
  }

  /** True while the log's notices are relied on (for tests and the docs' promise). */
  get watching(): boolean {
    return this.notified && !this.stopped;
  }

  /** Checks now and schedules the next check. */
  check(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.clearTimer();
    this.running = true;
    this.log
      .info()
      .then(
        (info) => {
          this.lastReported = undefined;
          if (this.stopped) return;
          this.status.refusalLifted("STREAM_CONFIG");
          this.onChecked?.(info);
        },
        (e: unknown) => {
          if (!isStateSyncError(e, "STREAM_CONFIG") || this.stopped) return;
          const error = e as StateSyncError;
          // The log refuses every append on a stream whose configuration it refuses: not
          // writable until a check finds it usable again (fresh-eyes trial: a replica reported
          // STREAM_CONFIG and still said writable, until its next update failed).
          this.status.cannotWrite(error);
          if (error.message === this.lastReported) return;
          this.lastReported = error.message;
          this.status.report(error);
        },
      )
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.check();
        } else this.schedule();
      });
  }

  stop(): void {
    this.stopped = true;
    this.clearTimer();
    this.unwatch?.();
    this.unwatch = undefined;
  }

  /** Checks within `delayMs` (sooner if a check is due sooner already). */
  private soon(delayMs: number): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined && this.timerDue <= Date.now() + delayMs) return;
    this.setTimer(delayMs);
  }

  private schedule(): void {
    if (this.stopped || this.intervalMs <= 0) return;
    const mean = this.intervalMs * (this.notified ? NOTIFIED_INTERVAL_FACTOR : 1);
    this.setTimer(mean * (0.67 + Math.random() * 0.66));
  }

  private setTimer(delayMs: number): void {
    this.clearTimer();
    this.timerDue = Date.now() + delayMs;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.check();
    }, delayMs);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
