import { StateSyncError } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { entryLine } from "../src/entries.js";
import { errorLine, isoTime, table } from "../src/output.js";
import { visible } from "../src/visible.js";

describe("the CLI's output", () => {
  // Regression test (fresh-eyes trial): a RangeError of the CLI's own rendering read
  // `statesync: UNAVAILABLE: Invalid time value`, sending the operator to a server that was fine.
  it("labels an unexpected exception INTERNAL, never UNAVAILABLE", () => {
    expect(errorLine(new RangeError("Invalid time value"))).toMatch(
      /^statesync: INTERNAL: RangeError: Invalid time value \(an unexpected error, likely a bug in statesync; STATESYNC_DEBUG=1 prints its stack\)$/,
    );
    expect(errorLine("thrown text")).toMatch(/^statesync: INTERNAL: thrown text /);
    expect(errorLine(new StateSyncError("TRUNCATED", "gone"))).toBe("statesync: TRUNCATED: gone");
    // A nats.js error the library did not map still says the server or connection failed.
    const nats = Object.assign(new Error("TIMEOUT"), { name: "NatsError", code: "TIMEOUT" });
    expect(errorLine(nats)).toBe("statesync: UNAVAILABLE: TIMEOUT (nats: TIMEOUT)");
  });

  // Regression test (fresh-eyes trial): `statesync tail` on a stream deleted under it ended with
  // the library's advice to a program ("open a new replica to use a new one").
  it("says what an operator does when the command's stream was deleted, or re-created", () => {
    const deleted = new StateSyncError(
      "LOG_REPLACED",
      "stream CLI was deleted: this replica's log is gone; open a new replica to use a new one",
      { details: { stream: "CLI", why: "stream CLI was deleted" } },
    );
    expect(errorLine(deleted)).toBe(
      "statesync: LOG_REPLACED: stream CLI was deleted: the stream this command was using is gone; run the command again once the stream exists",
    );
    const recreated = new StateSyncError(
      "LOG_REPLACED",
      "follow CLI.log: stream CLI was deleted and created again",
    );
    expect(errorLine(recreated)).toBe(
      "statesync: LOG_REPLACED: follow CLI.log: stream CLI was deleted and created again: the stream this command was using was replaced by a new one; run the command again to use the new stream",
    );
  });

  it("escapes control characters in an error line, which may quote the log", () => {
    const e = new StateSyncError("UNKNOWN_COMMAND", 'command "\u001b[2J\u202e" is unknown\nhere');
    expect(errorLine(e)).toBe(
      'statesync: UNKNOWN_COMMAND: command "\\u001b[2J\\u202e" is unknown here',
    );
  });

  it("renders a time no date can represent as its number", () => {
    expect(isoTime(8_640_000_000_000_000)).toBe("+275760-09-13T00:00:00.000Z");
    expect(isoTime(8_640_000_000_000_001)).toBe("8640000000000001");
    expect(isoTime(Number.MAX_SAFE_INTEGER)).toBe(String(Number.MAX_SAFE_INTEGER));
    expect(isoTime(undefined)).toBe("-");
  });

  it("visible escapes C0, DEL, C1, bidi controls and line separators, and nothing else", () => {
    const unsafe = ["\u0000", "\t", "\n", "\u001b", "\u007f", "\u0085", "\u009b", "\u061c"];
    unsafe.push("\u200e", "\u200f", "\u202a", "\u202e", "\u2066", "\u2069", "\u2028", "\u2029");
    for (const c of unsafe) {
      expect(visible(`a${c}b`)).toBe(`a\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}b`);
    }
    const safe = 'plain ASCII, "quotes", \\ backslash, é, 日本, 🙂, \u00a0, \u200b';
    expect(visible(safe)).toBe(safe);
    expect(visible(visible("\u001b[31m"))).toBe("\\u001b[31m"); // idempotent
    // One line of JSON stays JSON of the same value.
    const value = { s: "\\\u202e\u0085\u2028\u007f\u001b", [`k\u009b`]: 1 };
    const text = visible(JSON.stringify(value));
    expect(text).not.toMatch(/[\u007f-\u009f\u202e\u2028]/);
    expect(JSON.parse(text)).toEqual(value);
  });

  // A trial: `tail`'s KIND column was 8 wide, and a `malformed` row's later columns shifted.
  it("aligns tail's columns for every kind, malformed included", () => {
    const time = "2026-12-07T14:00:00.000Z";
    const rows = ["genesis", "commands", "snapshot", "malformed", "used-up"].map((kind, i) =>
      entryLine([String(i + 1), time, kind, "writer", `writer-${i}`, "120", "what"]),
    );
    const columns = (line: string) => [
      line.indexOf("writer"),
      line.indexOf("120"),
      line.indexOf("what"),
    ];
    for (const row of rows) expect(columns(row)).toEqual(columns(rows[0]!));
  });

  it("aligns table columns as printed", () => {
    expect(table(["A", "B"], [["\u001b", "x"]])).toEqual(["A       B", "\\u001b  x"]);
  });
});
