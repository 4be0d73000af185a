import { StateSyncError } from "@statesync/core";

/**
 * The leading tab's connection as its beats tell the other tabs (docs/offline.md, "Tabs"): its
 * failed attempts (`failed`), so a follower tab's replica hears them as the leading tab's
 * replica does through its own connection, and says `offline` at once (before, a follower tab
 * opened while the server was down said `connecting` until a call through the leader timed out,
 * about 5 s: fresh-eyes trial, stop 25); and, until its first connection is made or an attempt
 * failed, that it is still being made (`connecting`), so a follower's call waits for it rather
 * than failing at once (a new user's trial: a follower said `offline` before anything failed).
 */
export class LeadFailures {
  /** Leading: why the last connection attempt failed, till the leader's log is online. */
  private failure: string | undefined;
  /** Leading: the log of this lead was online (then no beat of it says `connecting`). */
  private wasOnline = false;
  /** Following: who hears that the leading tab cannot connect, and whether told this outage. */
  private readonly listeners = new Set<(error: StateSyncError) => void>();
  private told = false;

  /** Leading: a new lead, over a connection of its own: none made yet, none failed. */
  led(): void {
    this.failure = undefined;
    this.wasOnline = false;
  }

  /** Leading: the first connection of this lead is being made (not online yet, none failed). */
  get connecting(): boolean {
    return !this.wasOnline && this.failure === undefined;
  }

  /** Leading: an attempt failed with `error`. */
  note(error: StateSyncError): void {
    this.failure = error.message;
  }

  /**
   * Leading: the leader's log is online (told between beats too: an outage after the first
   * connection is no `connecting`, however short).
   */
  online(): void {
    this.failure = undefined;
    this.wasOnline = true;
  }

  /** Leading: what a beat says (`failed`, `connecting`), given whether the leader's log is online. */
  forBeat(online: boolean): { failed?: string; connecting?: true } {
    if (online) this.online();
    if (this.failure !== undefined) return { failed: this.failure };
    return this.wasOnline ? {} : { connecting: true };
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
