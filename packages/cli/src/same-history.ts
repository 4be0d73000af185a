/**
 * Reads of the log that must agree with each other (a state and the log's version as of its
 * revision; the bounds of the log and the entries between them): a compaction or an operator's
 * purge landing between two of them removes what the second was to read, and it read the log
 * as it was after the truncation (an `export` wrote its backup of a switched log without `from`:
 * the version read came after a compaction had removed every entry up to the state's revision).
 * {@link withSameHistory} runs such reads again until no truncation came in between.
 */
import { StateSyncError, type JetStreamLog } from "@statesync/node";

/** How many times {@link withSameHistory} runs the reads before it gives up. */
export const SAME_HISTORY_ATTEMPTS = 3;

/**
 * Runs `read` (reads of `log` that must see one retained history) and returns what it returns
 * when the log's first retained revision was the same before and after it: nothing was
 * truncated meanwhile (a log only grows at its end and is truncated at its start). Otherwise
 * runs it again, up to `attempts` times in all, then throws `TRUNCATED` (details: the first
 * retained revision before and after the last attempt). What `read` throws goes through as is.
 */
export async function withSameHistory<R>(
  log: Pick<JetStreamLog, "info">,
  read: () => Promise<R>,
  attempts = SAME_HISTORY_ATTEMPTS,
): Promise<R> {
  let before = 0;
  let after = 0;
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    before = (await log.info()).firstRevision;
    const result = await read();
    after = (await log.info()).firstRevision;
    if (after === before) return result;
  }
  throw new StateSyncError(
    "TRUNCATED",
    `the log was truncated (a compaction or a purge) while the command read it, ${attempts} times in a row (the first retained revision went from ${before} to ${after}): what it read would not agree; run it again`,
    { details: { firstRevision: after, before, attempts } },
  );
}
