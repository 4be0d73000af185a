import type { LogEntry, LogFollower, RevisionedLog } from "@statesync/core";
import type { EntryFeed } from "./feed.js";
import { errorToWire, toWire } from "./protocol.js";

/** What the leading tab posts to the other tabs: an entry, or that its follow failed. */
export type LeadPost =
  | { t: "entry"; entry: LogEntry; prev: number | undefined }
  | { t: "fail"; error: ReturnType<typeof errorToWire> };

/** Waits before following again after a failure, ms: doubling from the first to the last. */
const RETRY_MS = [1_000, 30_000] as const;

/**
 * While a tab leads: sends every entry of its own log to this tab's followers (`feed`) and, by
 * `post`, to the other tabs, from where this tab stands, or from the log's latest revision when it
 * follows nothing yet (asked again every second while the log does not answer); the feed is told
 * where it starts, so that this tab's followers behind it read up to it. A failure the log's
 * follower cannot recover from by itself (`onError`: the stream deleted or edited to drop
 * history, its subject denied) goes to this tab's followers (`EntryFeed.fail`) and to the other
 * tabs (a `fail` post), whose replicas react as to their own follower's (stall, or report and
 * follow again); then the log is followed again, after 1 s doubling to 30 s. (Before, no tab
 * heard of it: every tab stayed `live` without new entries; found reading the code, stop 39.)
 * Returns the function that stops it (`TabLog` calls it when the lead ends).
 */
export function forwardLeadEntries(
  log: RevisionedLog,
  feed: EntryFeed,
  post: (message: LeadPost) => void,
): () => void {
  let stopped = false;
  let follower: LogFollower | undefined;
  let retryMs: number = RETRY_MS[0];
  const start = async (): Promise<void> => {
    let from = feed.position + 1;
    // Asked once it answers: an empty log's answer (latest 0) is an answer, from revision 1.
    // Before, `from === 1` was the loop's test, so a leading tab of an empty log (a new state,
    // its first entry not written yet) asked again at once, without end: a request per round
    // trip to the server, and no follower until the first entry was there.
    for (let known = from > 1; !known && !stopped;) {
      try {
        from = (await log.info()).latestRevision + 1;
        known = true;
      } catch {
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
    if (stopped) return;
    feed.sourceStarts(from);
    let prev: number | undefined;
    const current: LogFollower = log.follow(from, {
      onEntry: (entry) => {
        retryMs = RETRY_MS[0];
        const wire = toWire(entry);
        feed.push(wire, prev);
        post({ t: "entry", entry: wire, prev });
        prev = entry.revision;
      },
      onError: (error) => {
        if (stopped || follower !== current) return;
        follower = undefined;
        void current.stop();
        feed.fail(error);
        post({ t: "fail", error: errorToWire(error) });
        setTimeout(() => void start(), retryMs);
        retryMs = Math.min(RETRY_MS[1], retryMs * 2);
      },
    });
    follower = current;
  };
  void start();
  return () => {
    stopped = true;
    void follower?.stop();
  };
}
