import type { LogEntry, RevisionedLog } from "./log.js";

/**
 * The first entry `log` retains at or after `firstRevision` (`LogInfo.firstRevision`), as
 * replicas read it, or undefined when it retains none: a point read of `firstRevision` itself,
 * else the first entry of a read from there to the log's end.
 * - nats-server 2.9.10 can report after filtered purges a `first_seq` it no longer holds (a trial:
 *   `first_seq` 55 for minutes, `messages` 1, `num_deleted` 1,361, 55 itself not found). The CLI
 *   called such a log corrupt, and a lost acknowledgement's look-up said `UNKNOWN_OUTCOME`.
 * - A compaction may remove `firstRevision` between the caller's `info()` and the reads here,
 *   its snapshot entry appended past the log's end as the caller knew it: a read to the log's
 *   end still yields that entry (`RevisionedLog.read`). Before `JetStreamLog` kept that promise,
 *   such reads came back empty and were tried again up to five times; beside replicas compacting
 *   in tight loops all five were overtaken, and the CLI called the log's first entry
 *   "malformed" (a new user's trial).
 *
 * Throws what the log throws (`UNAVAILABLE`, ...).
 */
export async function firstRetainedEntry(
  log: Pick<RevisionedLog, "entryAt" | "read">,
  firstRevision: number,
): Promise<LogEntry | undefined> {
  const exact = await log.entryAt(firstRevision);
  if (exact !== undefined) return exact;
  for await (const entry of log.read(firstRevision, Number.POSITIVE_INFINITY)) return entry;
  return undefined;
}
