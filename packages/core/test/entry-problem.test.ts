import { describe, expect, it } from "vitest";
import { decodeEntry } from "../src/entry.js";

const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

function problem(value: unknown): string {
  const result = decodeEntry(bytes(value));
  if (result.ok) throw new Error("the entry was accepted");
  expect(result.error.code).toBe("CORRUPT_ENTRY");
  return result.error.message;
}

/**
 * A malformed envelope's message names what is wrong and where, on one line: an operator reading
 * `statesync history` or an `onError` report read only "malformed entry: Invalid input" (zod's
 * word for a union none of whose branches fit), whatever the entry lacked.
 */
describe("a malformed entry's reason", () => {
  it("names the field an update lacks", () => {
    const message = problem({ v: 1, kind: "update", ts: 1, client: "c", base: 0, seed: 1 });
    expect(message).toMatch(/^malformed entry: .*at patches/);
    expect(message).not.toContain("\n");
  });

  it("names the field of a command that is wrong", () => {
    const entry = { v: 3, kind: "command", ts: 1, client: "c", seed: 1, name: "", args: {} };
    expect(problem(entry)).toMatch(/^malformed entry: Too small.* at name$/);
  });

  it("names the kind when it is none of the kinds", () => {
    expect(problem({ v: 1, kind: "upgrade", ts: 1, client: "c" })).toMatch(/at kind$/);
  });

  it("reads a snapshot with parts against the chunked snapshot's fields", () => {
    const entry = { v: 2, kind: "snapshot", ts: 1, client: "c", base: 3, model: "m", version: 1 };
    const message = problem({ ...entry, initialHash: "0".repeat(64), parts: { id: "x" } });
    expect(message).toMatch(/at parts\.count/);
  });

  it("says how many issues it left out", () => {
    expect(problem({ v: 2, kind: "snapshot", parts: {} })).toMatch(/; and \d+ more issues$/);
  });
});
