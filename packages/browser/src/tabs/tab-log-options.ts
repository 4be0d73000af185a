import type { RevisionedLog } from "@statesync/core";
import type { LockManagerLike, TokenStore } from "./leadership.js";

/** The log a leading tab runs on (a `JetStreamLog` over its own connection), and its release. */
export interface LeaderLog {
  readonly log: RevisionedLog;
  close(): Promise<void>;
}

/** Options of `TabLog` (`tab-log.ts`). */
export interface TabLogOptions {
  /** One name per origin and state: the channel's, the lock's and the token's. */
  readonly name: string;
  /** Whether the state owns its stream (`RevisionedLog.contiguous`). */
  readonly contiguous: boolean;
  /** Makes the log this tab uses while it leads (called each time it takes the lead). */
  leaderLog(): LeaderLog;
  readonly locks: LockManagerLike;
  readonly tokens: TokenStore;
  /** Default: `new BroadcastChannel(name)`. */
  readonly channel?: BroadcastChannel;
  /** This tab's id (default: random). */
  readonly tabId?: string;
  /**
   * `RevisionedLog.identityPrefix` of the logs `leaderLog` makes, known before any is made
   * (`openTabLog` gives the `JetStreamLog`'s). Absent: the tabs' log has none either.
   */
  readonly identityPrefix?: string;
}
