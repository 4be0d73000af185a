/**
 * Where a read from `--from` starts when compaction or truncation removed that revision: `tail`
 * and `history` start at the first retained entry instead, and say so on stderr (stdout keeps
 * only entries, so `--json` stays machine-readable), as `state --at` names it in its `TRUNCATED`
 * error.
 */
import { decodeEntry, type JetStreamLog, type LogInfo } from "@statesync/node";
import { printNotice } from "./output.js";

/**
 * The warning for a read asked to start at `from` in `log`, or undefined when no entry of the
 * state from `from` on was removed. In the shared layout the revisions before the first retained
 * entry may be other states' messages: only a first retained entry that is not the genesis says
 * that some of this state's were removed.
 */
export async function removedFromWarning(
  log: JetStreamLog,
  info: LogInfo,
  from: number,
): Promise<string | undefined> {
  const first = info.firstRevision;
  if (info.latestRevision === 0 || (first > 0 && from >= first)) return undefined;
  if (first === 0) {
    return `--from ${from} is before the retained history (no entry is retained; the latest revision is ${info.latestRevision}): every entry was truncated away`;
  }
  if (!log.contiguous) {
    const entry = await log.entryAt(first);
    const decoded = entry === undefined ? undefined : decodeEntry(entry.data);
    if (decoded?.ok && decoded.entry.kind === "genesis") return undefined;
  }
  return `--from ${from} is before the retained history (the first retained revision is ${first}): revisions before it were compacted or truncated away`;
}

/** Writes `warning` on stderr as the CLI's one-line warnings read: `statesync: warning: CODE: …`. */
export function warnTruncated(warning: string | undefined): void {
  if (warning !== undefined) printNotice(`statesync: warning: TRUNCATED: ${warning}`);
}
