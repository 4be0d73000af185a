import type { LogEntry, RevisionedLog } from "./log.js";

/** Range reads tried, at most, while each comes back empty (see {@link firstRetainedEntry}). */
const MAX_READS = 5;

/**
 * The first entry `log` retains at or after `firstRevision` (`LogInfo.firstRevision`), as
 * replicas read it, or undefined when it retains none: a point read of `firstRevision` itself,
 * else the first entry of a range read from there.
 * - nats-server 2.9.10 can report after filtered purges a `first_seq` it no longer holds (a trial:
 *   `first_seq` 55 for minutes, `messages` 1, `num_deleted` 1,361, 55 itself not found). The CLI
 *   called such a log corrupt, and a lost acknowledgement's look-up said `UNKNOWN_OUTCOME`.
 * - A range read ends at the latest revision it saw when it started: a compaction that appends
 *   its snapshot entry after that and truncates everything before leaves it empty (seen on
 *   2.9.10 in the same trial). An empty read is tried again, up to {@link MAX_READS} reads.
 *
 * Throws what the log throws (`UNAVAILABLE`, ...).
 */
export async function firstRetainedEntry(
  log: Pick<RevisionedLog, "entryAt" | "read">,
  firstRevision: number,
): Promise<LogEntry | undefined> {
  const exact = await log.entryAt(firstRevision);
  if (exact !== undefined) return exact;
  for (let read = 0; read < MAX_READS; read++) {
    for await (const entry of log.read(firstRevision, Number.POSITIVE_INFINITY)) return entry;
  }
  return undefined;
}
