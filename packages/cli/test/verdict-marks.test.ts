import { StateSyncError } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { replayMark } from "../src/verdicts.js";

/**
 * A trial (stop 40): `history --model` printed a refusal whose message quotes zod's text with a
 * literal `\u000a` (zod breaks its message before the path, and every printed line escapes
 * control characters). The mark is one line of words.
 */
describe("the replay's mark of an entry", () => {
  const zodText = "✖ Invalid input: expected number, received string\n  → at count";
  it("joins a message's lines (zod's break before the path) into one", () => {
    const error = new StateSyncError("COMMAND_FAILED", `the state fails the schema: ${zodText}`);
    expect(replayMark({ kind: "no-op", error }, 7)).toEqual({
      verdict: "no-op",
      error:
        "COMMAND_FAILED: the state fails the schema: ✖ Invalid input: expected number, received string → at count",
    });
  });

  it("does so for each failure of a commands entry too", () => {
    const failures = [0, 2].map(
      (index) => new StateSyncError("COMMAND_FAILED", `command ${index + 1}: ${zodText}`),
    );
    const mark = replayMark({ kind: "applied", failures } as never, 7);
    expect(mark?.error).not.toMatch(/\n/);
    expect(mark?.error).toContain(
      "command 3: ✖ Invalid input: expected number, received string → at count",
    );
  });
});
