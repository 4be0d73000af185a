/**
 * How the CLI speaks: JSON for scripts (`--json`), aligned tables and `label  value` blocks for
 * people, and one line on stderr for a failure (`statesync: CODE: message`, exit status 1).
 * Everything printed goes through `visible` (visible.ts): text from the log never reaches the
 * terminal as control characters.
 */
import { inspect } from "node:util";
import { ERROR_CODES, StateSyncError, type StateSyncErrorCode } from "@statesync/node";
import { jsonText } from "./json-text.js";
import { operatorCode } from "./server-gone.js";
import { visible } from "./visible.js";

/** Writes `value` as one line of JSON on stdout (control characters escaped, see `visible`). */
export function printJson(value: unknown): void {
  process.stdout.write(`${visible(jsonText(value))}\n`);
}

/** Writes `lines` on stdout, one per line, each made `visible`. */
export function printLines(lines: readonly string[]): void {
  if (lines.length > 0) process.stdout.write(`${lines.map(visible).join("\n")}\n`);
}

/** Writes `line` on stderr (a warning, a notice), made `visible`. */
export function printNotice(line: string): void {
  process.stderr.write(`${visible(line)}\n`);
}

/**
 * Formats rows as a table: a header line, then one line per row, each column padded to its
 * widest cell (the last column is not padded). Cells are made `visible` first, so the columns
 * line up as printed.
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string[] {
  const cells = [header, ...rows].map((r) => r.map(visible));
  // A loop, not Math.max(...): a spread of a long history's rows overflows the stack.
  const widths = header.map((_, i) => cells.reduce((w, r) => Math.max(w, (r[i] ?? "").length), 0));
  return cells.map((r) => formatRow(r, widths));
}

/**
 * One column of a table with a fixed layout: `width` characters; a longer cell is `cut` to it
 * (its middle replaced by `…`, see {@link cutTo}) or, when not, pushes the columns after it.
 */
export interface Column {
  readonly width: number;
  readonly cut?: boolean;
}

/**
 * `text` when it is at most `width` characters (code points), else its start and its end with
 * `…` between, `width` in all: both ends of an id stay (a writer's client id and its counter).
 */
export function cutTo(text: string, width: number): string {
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  const tail = Math.floor((width - 1) / 2);
  const head = width - 1 - tail;
  return `${chars.slice(0, head).join("")}…${tail > 0 ? chars.slice(-tail).join("") : ""}`;
}

/**
 * One table line with the given column widths (the last column unpadded), cells made `visible`
 * first, then cut to their column's width where it says so.
 */
export function formatRow(
  cells: readonly string[],
  widths: readonly number[] | readonly Column[],
): string {
  const columns = widths.map((w): Column => (typeof w === "number" ? { width: w } : w));
  return cells
    .map(visible)
    .map((c, i) => {
      if (i === cells.length - 1) return c;
      const column = columns[i];
      if (column === undefined) return c;
      return (column.cut ? cutTo(c, column.width) : c).padEnd(column.width);
    })
    .join("  ")
    .trimEnd();
}

/** Formats `label  value` pairs with the labels aligned, values made `visible`. */
export function block(pairs: ReadonlyArray<readonly [string, string]>): string[] {
  const width = Math.max(...pairs.map(([label]) => label.length));
  return pairs.map(([label, value]) => `${label.padEnd(width)}  ${visible(value)}`);
}

/** `JSON.stringify(value)` cut to `max` characters with an ellipsis. */
export function shortJson(value: unknown, max = 80): string {
  const text = value === undefined ? "" : jsonText(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/**
 * An ISO 8601 time of a timestamp in ms, "-" when unknown, or the number itself when no date
 * can represent it: entries may carry any integer up to 2^53 − 1 and JavaScript dates end at
 * 8.64e15 ms (year 275760), past which `toISOString` throws.
 */
export function isoTime(ms: number | undefined): string {
  if (ms === undefined) return "-";
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}

/** What a failure prints: a `StateSyncError` code, or `INTERNAL` (see {@link failureOf}). */
export type FailureCode = StateSyncErrorCode | "INTERNAL";

/**
 * The code and message a failure prints. A `StateSyncError` (of this or another copy of the
 * core) keeps its own, but for `CONNECTION_CLOSED`, which reads `UNAVAILABLE` as every other
 * server that went away (server-gone.ts); a nats.js error that escaped the library's mapping is
 * `UNAVAILABLE` (the server or the connection failed); anything else is `INTERNAL`: an unexpected exception, a bug
 * (it once read `UNAVAILABLE`, sending operators to look at a server that was fine).
 */
export function failureOf(error: unknown): { code: FailureCode; message: string } {
  if (error instanceof StateSyncError || isStateSyncLike(error)) {
    return operatorCode(error.code, forOperators(error));
  }
  if (error instanceof Error && error.name === "NatsError") {
    const natsCode = (error as { code?: unknown }).code;
    return { code: "UNAVAILABLE", message: `${error.message} (nats: ${String(natsCode)})` };
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return {
    code: "INTERNAL",
    message: `${message} (an unexpected error, likely a bug in statesync; STATESYNC_DEBUG=1 prints its stack)`,
  };
}

/**
 * A library error's message in an operator's words where the library's advice is a program's:
 * `LOG_REPLACED` says "open a new replica to use a new one", which means nothing at a prompt (a
 * fresh-eyes trial: `statesync tail` on a stream deleted under it). The command's stream was
 * deleted, or deleted and created again, while it ran: say so, and what to do (run it again).
 */
function forOperators(error: StateSyncError): string {
  // The replica's advice for a JetStream nobody answers (a `domain` option, "Retrying.") is a
  // program's: a command has no `domain` and does not retry (a trial: `import` said "Retrying."
  // and exited 1).
  if (error.details.jetstream === "unreachable") {
    const what = error.message.split("; ")[0];
    return `${what}. Enable JetStream on the server (nats-server -js) or for this account`;
  }
  // A log that went back (tail-guard.ts, the engine's check) says what to do itself.
  if (error.code !== "LOG_REPLACED" || error.details.rewound === true) return error.message;
  const why = typeof error.details.why === "string" ? error.details.why : error.message;
  const advice = /created again/.test(why)
    ? "the stream this command was using was replaced by a new one; run the command again to use the new stream"
    : "the stream this command was using is gone; run the command again once the stream exists";
  return `${why}: ${advice}`;
}

/** A StateSyncError from another copy of the core (a model module's own install). */
function isStateSyncLike(e: unknown): e is StateSyncError {
  return (
    e instanceof Error &&
    e.name === "StateSyncError" &&
    ERROR_CODES.includes((e as { code?: unknown }).code as StateSyncErrorCode)
  );
}

/**
 * The one line a failure prints on stderr: `statesync: CODE: message` (no newlines inside, made
 * `visible`: messages may quote the log).
 */
export function errorLine(error: unknown): string {
  const { code, message } = failureOf(error);
  return visible(`statesync: ${code}: ${message.replace(/\s*\n\s*/g, " ")}`);
}

/** Writes a failure's line on stderr, and with `STATESYNC_DEBUG` set all of it (stack, cause). */
export function printFailure(error: unknown): void {
  process.stderr.write(`${errorLine(error)}\n`);
  if (process.env.STATESYNC_DEBUG) {
    process.stderr.write(`${inspect(error).split("\n").map(visible).join("\n")}\n`);
  }
}
