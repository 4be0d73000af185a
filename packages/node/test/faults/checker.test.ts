import { describe, expect, it } from "vitest";
import { stateHash } from "@statesync/node";
import {
  checkHistory,
  classify,
  History,
  type CheckInput,
  type LogRecord,
  type OpRecord,
  type ReplicaState,
} from "../support/checker.js";
import type { LedgerState } from "../support/models.js";

/** The checker must be able to fail: each rule is broken once on a hand-made history. */

const op = (opId: string, outcome: OpRecord["outcome"], by = 1): OpRecord => ({
  opId,
  client: opId.split(".")[0]!,
  kind: "conditional",
  by,
  outcome,
});
const ok = (revision: number) => ({ status: "ok" as const, revision });
const failed = (code = "RETRY_LIMIT") => ({ status: "failed" as const, code });
const unknown = (code = "UNKNOWN_OUTCOME") => ({ status: "unknown" as const, code });
const state = (ops: string[], count = ops.length): LedgerState => ({ count, ops, notes: [] });
const replica = (client: string, revision: number, s: LedgerState): ReplicaState => ({
  client,
  revision,
  state: s,
});

/** A run that keeps every guarantee: a.1 at 2, b.1 at 3, a.2 unknown and landed at 4, b.2 failed. */
function good(): CheckInput & { log: LogRecord[] } {
  const final = state(["a.1", "b.1", "a.2"]);
  const observations = new History();
  observations.observe("a", 1, state([]));
  observations.observe("a", 2, state(["a.1"]));
  observations.observe("a", 4, final);
  observations.observe("b", 3, state(["a.1", "b.1"]));
  observations.observe("b", 4, final);
  return {
    ops: [op("a.1", ok(2)), op("b.1", ok(3)), op("a.2", unknown()), op("b.2", failed())],
    replicas: [replica("a", 4, final), replica("b", 4, state(["a.1", "b.1", "a.2"]))],
    observations: observations.observations,
    log: [
      { revision: 1, opIds: [] },
      { revision: 2, opIds: ["a.1"] },
      { revision: 3, opIds: ["b.1"] },
      { revision: 4, opIds: ["a.2"] },
    ],
  };
}

function violationsOf(input: CheckInput): string[] {
  return checkHistory(input).violations;
}

describe("history checker", () => {
  it("accepts a run that keeps every guarantee", () => {
    const verdict = checkHistory(good());
    expect(verdict.violations).toEqual([]);
    expect(verdict.stats).toMatchObject({ ok: 2, failed: 1, unknown: 1, unknownApplied: 1 });
  });

  it("accepts an unknown outcome that did not land, and a pending op", () => {
    const g = good();
    const final = state(["a.1", "b.1"]);
    const verdict = checkHistory({
      ops: [op("a.1", ok(2)), op("b.1", ok(3)), op("a.2", unknown()), op("c.1", undefined)],
      replicas: [replica("a", 3, final)],
      log: g.log.slice(0, 3),
    });
    expect(verdict.violations).toEqual([]);
  });

  it("catches an acknowledged update applied twice (Pravega issue 5712)", () => {
    const g = good();
    const final = state(["a.1", "b.1", "a.2", "a.1"]);
    expect(
      violationsOf({ ...g, replicas: [replica("a", 5, final)], log: undefined }).join(),
    ).toContain("a.1 was acknowledged at revision 2 but applied 2 times");
  });

  it("catches an acknowledged update that is lost", () => {
    const g = good();
    expect(
      violationsOf({ ...g, replicas: [replica("a", 4, state(["b.1", "a.2"]))], log: undefined }),
    ).toContain("a.1 was acknowledged at revision 2 but applied 0 times");
  });

  it("catches an update reported failed that is in the log (a conflict that was its own write, Pravega issue 2139)", () => {
    const g = good();
    const final = state(["a.1", "b.1", "a.2", "b.2"]);
    const v = violationsOf({
      ...g,
      observations: undefined,
      replicas: [replica("a", 5, final)],
      log: [...g.log, { revision: 5, opIds: ["b.2"] }],
    });
    expect(v).toContain("b.2 failed with RETRY_LIMIT but was applied 1 times");
    expect(v).toContain("b.2 failed with RETRY_LIMIT but is in the log");
  });

  it("catches an unknown outcome applied twice and a duplicate in the log", () => {
    const g = good();
    const final = state(["a.1", "b.1", "a.2", "a.2"]);
    const v = violationsOf({
      ...g,
      observations: undefined,
      replicas: [replica("a", 5, final)],
      log: [...g.log, { revision: 5, opIds: ["a.2"] }],
    });
    expect(v).toContain("a.2 (outcome unknown) was applied 2 times");
    expect(v).toContain("a.2 (outcome unknown) is in the log 2 times");
  });

  it("catches an update nobody invoked", () => {
    const g = good();
    const final = state(["a.1", "b.1", "a.2", "x.9"]);
    expect(
      violationsOf({
        ...g,
        observations: undefined,
        replicas: [replica("a", 5, final)],
        log: undefined,
      }),
    ).toContain("x.9 was applied but no client invoked it");
  });

  it("catches an acknowledged revision that does not match the log", () => {
    const g = good();
    const log = [...g.log];
    log[1] = { revision: 2, opIds: [] };
    log[2] = { revision: 3, opIds: ["a.1", "b.1"] };
    expect(violationsOf({ ...g, log })).toContain("a.1 was acknowledged at revision 2 but is at 3");
  });

  it("catches replicas that diverge at one revision", () => {
    const g = good();
    const v = violationsOf({
      ...g,
      replicas: [g.replicas[0]!, replica("b", 4, state(["a.1", "b.1", "a.2"], 7))],
    });
    expect(v).toContain("replicas a and b differ at revision 4");
  });

  it("catches a client whose revision goes backwards", () => {
    const g = good();
    const h = new History();
    h.observe("a", 3, state(["a.1", "b.1"]));
    h.observe("a", 2, state(["a.1"]));
    const v = violationsOf({ ...g, observations: h.observations });
    expect(v).toContain("a went back from revision 3 to 2");
    expect(v).toContain("a un-applied updates (ops 2 -> 1)");
  });

  it("catches a client that applies updates out of log order", () => {
    const g = good();
    const h = new History();
    h.observe("b", 3, state(["b.1"]));
    expect(violationsOf({ ...g, observations: h.observations })).toContain(
      "b applied b.1 as update #1; the log order has a.1",
    );
  });

  it("catches replicas whose order differs from the log's", () => {
    const g = good();
    const log = [...g.log];
    log[1] = { revision: 2, opIds: ["b.1"] };
    log[2] = { revision: 3, opIds: ["a.1"] };
    expect(violationsOf({ ...g, observations: undefined, log })).toContain(
      "replicas applied the updates in an order other than the log's",
    );
  });

  it("catches two clients that saw different states at one revision", () => {
    const g = good();
    const h = new History();
    h.observe("a", 3, state(["a.1", "b.1"]));
    h.observe("b", 3, state(["a.1", "b.1"], 2));
    h.observations.get("b")![0] = { ...h.observations.get("b")![0]!, hash: stateHash({ x: 1 }) };
    expect(violationsOf({ ...g, observations: h.observations })).toContain(
      "b and a saw different states at revision 3",
    );
  });

  it("catches a counter that does not match the committed increments", () => {
    const g = good();
    const v = violationsOf({
      ...g,
      observations: undefined,
      replicas: [replica("a", 4, state(["a.1", "b.1", "a.2"], 4))],
    });
    expect(v).toContain("the counter is 4 but the applied increments sum to 3");
  });

  it("classifies rejections: nothing appended is a failure, anything else unknown", () => {
    expect(classify({ code: "RETRY_LIMIT" })).toEqual(failed("RETRY_LIMIT"));
    expect(classify({ code: "PERMISSION_DENIED" })).toEqual(failed("PERMISSION_DENIED"));
    expect(classify({ code: "UNKNOWN_OUTCOME" })).toEqual(unknown("UNKNOWN_OUTCOME"));
    expect(classify({ code: "TRUNCATED" })).toEqual(unknown("TRUNCATED"));
    expect(classify(new Error("boom")).status).toBe("unknown");
  });
});
