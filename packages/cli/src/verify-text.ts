/** The words of `statesync verify`'s text output (commands/verify.ts). */
import type { VerifyReport } from "./commands/verify.js";

/**
 * The `result` line: what the report's `result` means, in words, then the skips and an invalid
 * state found beside a worse finding (fresh-eyes trials: a log that skipped entries and left a
 * state failing the schema led with the skips alone, and one that diverged or stopped did not
 * say it also skipped entries; both showed only in `--json`).
 */
export function resultText(report: VerifyReport): string {
  const parts = [worstText(report)];
  const skips = report.skipped + report.partly > 0;
  if (skips && report.result !== "skips") parts.push(skipsText(report));
  if (report.invalidState !== null && report.result !== "invalid-state") {
    parts.push("INVALID STATE");
  }
  return parts.join("; ");
}

/** `SKIPS 2 entries and part of 1 (every replica alike)`. */
function skipsText(report: VerifyReport): string {
  const entries = (n: number) => `${n} entr${n === 1 ? "y" : "ies"}`;
  const { skipped: n, partly: p } = report;
  const what =
    p === 0 ? entries(n) : n === 0 ? `part of ${entries(p)}` : `${entries(n)} and part of ${p}`;
  return `SKIPS ${what} (every replica alike)`;
}

function worstText(report: VerifyReport): string {
  switch (report.result) {
    case "ok":
      return "ok";
    case "stops":
      // A stream purged whole retains nothing: there is no revision to name (a trial: "at 0").
      return report.stoppedAt === 0
        ? "STOPS: the log retains no entry"
        : `STOPS at revision ${report.stoppedAt}`;
    case "diverges":
      return "DIVERGES";
    case "restarts":
      return "RESTARTS: a genesis entry after the state's entries makes it the initial state again (every replica alike)";
    case "skips":
      return skipsText(report);
    case "invalid-state":
      return "INVALID STATE";
  }
}

/**
 * The `replayed` line of a log that retains no entry: purged whole, or never written, which for a
 * shared stream's key is most likely a mistyped `--key` (a trial: a health check went green).
 */
export function nothingText(report: VerifyReport, key: string | undefined): string {
  if (report.stoppedAt !== null || report.revision > 0) return "nothing (the log retains no entry)";
  return key === undefined
    ? "nothing (nothing was ever appended to the stream)"
    : `nothing (nothing was ever appended under key ${key}: is --key right?)`;
}

/**
 * The `replayed` line: the revisions the replay went through, from where it started (which may
 * be after the first retained revision: `replayedFrom`), or why nothing was replayed.
 */
export function replayedText(report: VerifyReport, key: string | undefined): string {
  if (report.firstRevision === 0) return nothingText(report, key);
  if (report.revision < report.replayedFrom) {
    const where =
      report.replayedFrom === report.firstRevision
        ? `the first retained revision, ${report.replayedFrom}`
        : `revision ${report.replayedFrom}`;
    return `nothing (the replay stops at ${where})`;
  }
  return `revisions ${report.replayedFrom} to ${report.revision}`;
}

/** The `refused commands` line: how many, and whether they count (`--allow-refused`). */
export function refusedText(report: VerifyReport, allowed: boolean): string {
  const n = `${report.refused} (every replica alike)`;
  return allowed
    ? `${n}, allowed (--allow-refused)`
    : `${n}, among the skips (--allow-refused lets them pass)`;
}

/**
 * The `not checked` line: starting points whose base a compaction or purge removed while verify
 * ran (the log it started on had it: no problem of the log; the next run checks the log as it is).
 */
export function notCheckedText(report: VerifyReport): string {
  const n = report.notChecked;
  return `${n} snapshot or switch entr${n === 1 ? "y" : "ies"}: the history at ${n === 1 ? "its" : "their"} base was removed while verify ran (a compaction or a purge); run verify again to check the log as it is now`;
}
