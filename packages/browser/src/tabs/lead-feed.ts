import type { LogEntry, LogFollower, RevisionedLog } from "@statesync/core";
import type { EntryFeed } from "./feed.js";
import { toWire } from "./protocol.js";

/**
 * While a tab leads: sends every entry of its own log to this tab's followers (`feed`) and, by
 * `send`, to the other tabs, from where this tab stands, or from the log's latest revision when it
 * follows nothing yet (asked again every second while the log does not answer); the feed is told
 * where it starts, so that this tab's followers behind it read up to it. Returns the function
 * that stops it (`TabLog` calls it when the lead ends).
 */
export function forwardLeadEntries(
  log: RevisionedLog,
  feed: EntryFeed,
  send: (entry: LogEntry, prev: number | undefined) => void,
): () => void {
  let stopped = false;
  let follower: LogFollower | undefined;
  void (async () => {
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
    follower = log.follow(from, {
      onEntry: (entry) => {
        const wire = toWire(entry);
        feed.push(wire, prev);
        send(wire, prev);
        prev = entry.revision;
      },
    });
  })();
  return () => {
    stopped = true;
    void follower?.stop();
  };
}
