import { describe, expect, it } from "vitest";
import { StateSyncError } from "@statesync/node";
import { outcomeOf } from "./outcome.js";
import { makeSchedule } from "./schedule.js";

describe("chaos schedule and outcomes", () => {
  it("one seed gives one schedule; another seed another", () => {
    expect(makeSchedule(42)).toEqual(makeSchedule(42));
    expect(makeSchedule(43).steps).not.toEqual(makeSchedule(42).steps);
  });

  it("a schedule keeps to its bounds: 3-5 replicas, steps in time order, restarts apart", () => {
    for (let seed = 0; seed < 50; seed++) {
      const s = makeSchedule(seed);
      expect(s.replicas).toBeGreaterThanOrEqual(3);
      expect(s.replicas).toBeLessThanOrEqual(5);
      const ats = s.steps.map((p) => p.at);
      expect(ats).toEqual([...ats].sort((a, b) => a - b));
      expect(s.steps.every((p) => p.replica < s.replicas && p.at < s.durationMs)).toBe(true);
      const restarts = s.steps.filter((p) => p.kind === "restart").map((p) => p.at);
      expect(restarts.length).toBeLessThanOrEqual(2);
      for (let i = 1; i < restarts.length; i++) {
        expect(restarts[i]! - restarts[i - 1]!).toBeGreaterThanOrEqual(1_500);
      }
    }
  });

  it("UNAVAILABLE with notSent means not applied; UNAVAILABLE after a send and UNKNOWN_OUTCOME are unknown", () => {
    const notSent = new StateSyncError("UNAVAILABLE", "x", { details: { notSent: true } });
    expect(outcomeOf(notSent)).toEqual({ status: "failed", code: "UNAVAILABLE(notSent)" });
    expect(outcomeOf(new StateSyncError("UNAVAILABLE", "x"))).toMatchObject({ status: "unknown" });
    expect(outcomeOf(new StateSyncError("UNKNOWN_OUTCOME", "x"))).toMatchObject({
      status: "unknown",
    });
    expect(outcomeOf(new StateSyncError("CLOSED", "x"))).toMatchObject({ status: "failed" });
  });
});
