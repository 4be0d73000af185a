import { isStateSyncError, type StateSyncError } from "../errors.js";
import type { RevisionedLog } from "../log.js";
import type { StatusHub } from "./status.js";

/**
 * Watches the log's configuration while the replica is connected (issue 10, case 5): an operator
 * may set limits that drop history (`max_msgs`, `max_age`, a discard policy, ...) on a stream
 * that live replicas use; `RevisionedLog.info()` checks the configuration (`STREAM_CONFIG` when it
 * can drop history). The check runs once after every (re)connection and then rarely, at a
 * jittered interval (default between 30 and 60 s), so thousands of followers add a small, spread
 * load. A problem is reported as an `"error"` event once per distinct message; nothing stops.
 *
 * Invariant: at most one check runs at a time; none runs after `stop()`.
 */
export class ConfigWatch {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  private stopped = false;
  private lastReported: string | undefined;

  /** `intervalMs`: mean time between checks (0: only after (re)connecting). */
  constructor(
    private readonly log: RevisionedLog,
    private readonly status: StatusHub,
    private readonly intervalMs: number,
  ) {}

  /** Checks now and schedules the next check. */
  check(): void {
    if (this.stopped || this.running) return;
    this.running = true;
    this.log
      .info()
      .then(
        () => {
          this.lastReported = undefined;
        },
        (e: unknown) => {
          if (!isStateSyncError(e, "STREAM_CONFIG") || this.stopped) return;
          const error = e as StateSyncError;
          if (error.message === this.lastReported) return;
          this.lastReported = error.message;
          this.status.report(error);
        },
      )
      .finally(() => {
        this.running = false;
        this.schedule();
      });
  }

  private schedule(): void {
    if (this.stopped || this.intervalMs <= 0) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const wait = this.intervalMs * (0.67 + Math.random() * 0.66);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.check();
    }, wait);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
