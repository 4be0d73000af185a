import { StateSyncError } from "@statesync/core";

/**
 * The leading tab's failed connection attempts, told to the other tabs through its beats
 * (docs/offline.md, "Tabs"): a follower tab's replica hears them as the leading tab's replica
 * does through its own connection, and says `offline` at once. Before, a follower tab opened while
 * the server was down said `connecting` until a call through the leader timed out, about 5 s
 * (fresh-eyes trial, stop 25).
 */
export class LeadFailures {
  /** Leading: why the last connection attempt failed, till the leader's log is online. */
  private failure: string | undefined;
  /** Following: who hears that the leading tab cannot connect, and whether told this outage. */
  private readonly listeners = new Set<(error: StateSyncError) => void>();
  private told = false;

  /** Leading: an attempt failed with `error`. */
  note(error: StateSyncError): void {
    this.failure = error.message;
  }

  /** Leading: what a beat says (`failed`), given whether the leader's log is online. */
  forBeat(online: boolean): string | undefined {
    if (online) this.failure = undefined;
    return this.failure;
  }

  /** Following: a beat from the leader (`online`, `failed`): tells the listeners once per outage. */
  heard(online: boolean, failed: string | undefined): void {
    if (online) this.told = false;
    else if (failed !== undefined && !this.told) {
      this.told = true;
      const error = new StateSyncError(
        "UNAVAILABLE",
        `the leading tab cannot reach the server: ${failed}`,
      );
      for (const l of [...this.listeners]) l(error);
    }
  }

  /** Following: `listener` hears once per outage that the leading tab cannot connect. */
  watch(listener: (error: StateSyncError) => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }
}
