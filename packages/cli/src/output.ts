/**
 * How the CLI speaks: JSON for scripts (`--json`), aligned tables and `label  value` blocks for
 * people, and one line on stderr for a failure (`statesync: CODE: message`, exit status 1).
 */
import { ERROR_CODES, StateSyncError, type StateSyncErrorCode } from "@statesync/node";

/** Writes `value` as one line of JSON on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

/** Writes `lines` on stdout, one per line. */
export function printLines(lines: readonly string[]): void {
  if (lines.length > 0) process.stdout.write(`${lines.join("\n")}\n`);
}

/**
 * Formats rows as a table: a header line, then one line per row, each column padded to its
 * widest cell (the last column is not padded).
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  return [header, ...rows].map((cells) => formatRow(cells, widths));
}

/** One table line with the given column widths (the last column unpadded). */
export function formatRow(cells: readonly string[], widths: readonly number[]): string {
  return cells
    .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? c.length)))
    .join("  ")
    .trimEnd();
}

/** Formats `label  value` pairs with the labels aligned. */
export function block(pairs: ReadonlyArray<readonly [string, string]>): string[] {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${label.padEnd(width)}  ${value}`);
}

/** `JSON.stringify(value)` cut to `max` characters with an ellipsis. */
export function shortJson(value: unknown, max = 80): string {
  const text = value === undefined ? "" : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** An ISO 8601 time of a timestamp in ms, or "-" when unknown. */
export function isoTime(ms: number | undefined): string {
  return ms === undefined ? "-" : new Date(ms).toISOString();
}

/**
 * Any error as a `StateSyncError`: one already is; anything else (a bug, a library's error)
 * becomes `UNAVAILABLE` with its message, the cause kept.
 */
export function asStateSyncError(error: unknown): StateSyncError {
  if (error instanceof StateSyncError) return error;
  if (isStateSyncLike(error)) {
    return new StateSyncError(error.code, error.message, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new StateSyncError("UNAVAILABLE", message, { cause: error });
}

/** A StateSyncError from another copy of the core (a model module's own install). */
function isStateSyncLike(e: unknown): e is StateSyncError {
  return (
    e instanceof Error &&
    e.name === "StateSyncError" &&
    ERROR_CODES.includes((e as { code?: unknown }).code as StateSyncErrorCode)
  );
}

/** The one line a failure prints on stderr: `statesync: CODE: message` (no newlines inside). */
export function errorLine(error: unknown): string {
  const e = asStateSyncError(error);
  return `statesync: ${e.code}: ${e.message.replace(/\s*\n\s*/g, " ")}`;
}
