import { describe, expect, it } from "vitest";
import type { Observation, OpRecord } from "../support/checker.js";
import { checkResolvedRevisions } from "./revisions.js";

const op = (opId: string, revision: number): OpRecord => ({
  opId,
  client: "a",
  kind: "conditional",
  by: 1,
  outcome: { status: "ok", revision },
});
const seen = (revision: number, opsLength: number): Observation => ({
  revision,
  opsLength,
  count: opsLength,
  hash: undefined,
  lastOp: undefined,
});

describe("checkResolvedRevisions", () => {
  const ops = [op("a.1", 2), op("a.2", 3)];
  const applied = ["a.1", "a.2"];

  it("accepts states that hold each update from its revision on", () => {
    const observations = new Map([["b", [seen(1, 0), seen(2, 1), seen(3, 2), seen(5, 2)]]]);
    expect(checkResolvedRevisions(ops, applied, observations)).toEqual([]);
  });

  it("catches a state at the revision that lacks the update, and one before it that holds it", () => {
    expect(checkResolvedRevisions(ops, applied, new Map([["b", [seen(3, 1)]]]))).toEqual([
      "a.2 resolved at revision 3 but b's state at 3 lacks it",
    ]);
    expect(checkResolvedRevisions(ops, applied, new Map([["b", [seen(2, 2)]]]))).toEqual([
      "a.2 resolved at revision 3 but b's state at 2 holds it",
    ]);
  });
});
