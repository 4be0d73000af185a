/**
 * The storage behind every handle of one `MemoryLog` (memory-log.ts), as a server's would be:
 * the entries, the message ids, the followers, and the faults injected on purpose.
 */

import { StateSyncError, type StateSyncErrorCode } from "./errors.js";
import type {
  LogConfigWatcher,
  LogConnectionStatus,
  LogEntry,
  LogFollowHandler,
  LogFollower,
} from "./log.js";

/** An injected append fault. */
export interface Fault {
  kind: "fail" | "lose-ack";
  code: StateSyncErrorCode;
}

/** Storage shared by all handles of one MemoryLog. */
export class MemoryLogCore {
  entries: LogEntry[] = [];
  lastRevision = 0;
  identity = newIdentity();
  messageIds = new Map<string, number>();
  followers = new Set<MemoryFollower>();
  statusListeners = new Set<(s: LogConnectionStatus) => void>();
  offline = false;
  faults: Fault[] = [];
  appendDelayMs = 0;
  truncateFaults: StateSyncErrorCode[] = [];
  truncations = 0;
  configProblem: string | undefined;
  configWatchers = new Set<LogConfigWatcher>();
  configWatchDenied = false;
  constructor(
    readonly maxEntryBytes: number,
    readonly duplicateCheck: "dedupe-first" | "expected-first",
  ) {}
}

let identityCounter = 0;
/** A new incarnation's identity. */
export function newIdentity(): string {
  identityCounter += 1;
  return `memory-${identityCounter}-${Math.random().toString(36).slice(2, 10)}`;
}

/**
 * A follower of one handle: delivers in order, pauses while offline, ends with `LOG_REPLACED`
 * when the log was recreated, and quietly once `gone()` (its handle's connection was closed: the
 * handle's `closed` status says so).
 */
export class MemoryFollower implements LogFollower {
  private next: number;
  private stopped = false;
  private scheduled = false;
  private readonly identity: string;
  constructor(
    private readonly core: MemoryLogCore,
    fromRevision: number,
    private readonly handler: LogFollowHandler,
    identity: string,
    private readonly gone: () => boolean,
  ) {
    this.identity = identity;
    this.next = fromRevision;
    core.followers.add(this);
    this.poke();
  }
  poke(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      this.deliver();
    }, 0);
  }
  private deliver(): void {
    if (this.gone()) return void this.stop();
    if (this.stopped || this.core.offline) return;
    if (this.core.identity !== this.identity) {
      void this.stop();
      this.handler.onError?.(replacedError());
      return;
    }
    for (const entry of this.core.entries) {
      if (this.stopped) return;
      if (entry.revision < this.next) continue;
      this.next = entry.revision + 1;
      this.handler.onEntry(entry);
    }
  }
  async stop(): Promise<void> {
    this.stopped = true;
    this.core.followers.delete(this);
  }
}

/** The `LOG_REPLACED` error of a handle whose log was recreated. */
export function replacedError(): StateSyncError {
  return new StateSyncError(
    "LOG_REPLACED",
    "the memory log was recreated: this handle's log is gone; open a new replica on a new handle",
  );
}
