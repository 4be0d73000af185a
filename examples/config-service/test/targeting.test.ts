import type { Logger } from "@openfeature/core";
import { FlagdCore } from "@openfeature/flagd-core";
import { describe, expect, it } from "vitest";
import type { Json, JsonObject } from "../src/flagd-schema.js";
import { expandedTargetings, findFractionals, possibleVariants } from "../src/targeting.js";

const silent: Logger = { error: () => {}, warn: () => {}, info: () => {}, debug: () => {} };

/** Targeting rules and the variant names `possibleVariants` must find (none computed). */
const KNOWN: Array<[JsonObject, string[]]> = [
  [
    { if: [{ "==": [{ var: "plan" }, "pro"] }, "a", { if: [{ "==": [{ var: "n" }, 1] }, "b"] }] },
    ["a", "b"],
  ],
  [{ or: [{ "==": [{ var: "plan" }, "pro"] }, "c"] }, ["true", "false", "c"]],
  [{ if: ["a"] }, ["a"]],
  [{ in: [{ var: "plan" }, ["pro"]] }, ["true", "false"]],
  [{ fractional: [{ var: "plan" }, ["a", 1], ["c", 1]] }, ["a", "c"]],
  [
    {
      if: [
        {
          fractional: [
            [true, 1],
            [false, 1],
          ],
        },
        "b",
        null,
      ],
    },
    ["b"],
  ],
  [
    {
      fractional: [
        [true, 1],
        [2, 1],
      ],
    },
    ["true", "2"],
  ],
];

/** Every variant name flagd-core serves for `targeting` over a spread of contexts. */
function served(targeting: JsonObject): Set<string> {
  const names = ["a", "b", "c", "true", "false", "2", "pro", "free"];
  const core = new FlagdCore(undefined, silent);
  const variants = Object.fromEntries(names.map((n) => [n, n]));
  core.setConfigurations(
    JSON.stringify({
      flags: { f: { state: "ENABLED", variants, defaultVariant: null, targeting } },
    }),
  );
  const seen = new Set<string>();
  for (let i = 0; i < 60; i++) {
    for (const plan of ["pro", "free", undefined]) {
      const context = { targetingKey: `u-${i}`, n: i % 2, ...(plan ? { plan } : {}) };
      const result = core.resolve("string", "f", "-", context);
      expect(result.reason).not.toBe("ERROR");
      if (result.variant !== undefined) seen.add(result.variant);
    }
  }
  return seen;
}

describe("possibleVariants", () => {
  it("finds every variant flagd serves, and no more than the variant positions hold", () => {
    for (const [targeting, expected] of KNOWN) {
      const found = possibleVariants(targeting);
      expect(found.computed, JSON.stringify(targeting)).toEqual([]);
      expect([...found.names].sort(), JSON.stringify(targeting)).toEqual([...expected].sort());
      for (const name of served(targeting)) expect(found.names).toContain(name);
    }
  });

  it("reports computed results with where they are", () => {
    const found = possibleVariants({ or: [{ var: "plan" }, "b"] });
    expect(found.computed).toEqual(['"var" at targeting.or[0]']);
    expect(served({ or: [{ var: "plan" }, "b"] })).toContain("pro"); // the plan itself
    const buckets = possibleVariants({ fractional: [[{ cat: ["a", ""] }, 1]] });
    expect(buckets.computed).toEqual(['"cat" at targeting.fractional[0][0]']);
  });

  it("reads $ref through $evaluators the way flagd-core expands them", () => {
    const config: JsonObject = {
      $evaluators: {
        pro: { "==": [{ var: "plan" }, "pro"] },
        pick: { if: [{ $ref: "pro" }, "a"] },
      },
      flags: { f: { state: "ENABLED", variants: { a: 1 }, targeting: { $ref: "pick" } } },
    };
    // flagd replaces "pro" first (nothing uses it at top level yet), then "pick": the "pro" left
    // inside pick's body stays a $ref, as flagd-core leaves it
    expect(expandedTargetings(config)["f"]).toEqual({ if: [{ $ref: "pro" }, "a"] });
    expect(possibleVariants(expandedTargetings(config)["f"]).names).toEqual(new Set(["a"]));
    const core = new FlagdCore(undefined, silent);
    core.setConfigurations(JSON.stringify(config));
    expect(core.resolve("number", "f", 0, { plan: "pro" })).toMatchObject({
      reason: "ERROR",
      errorCode: "PARSE_ERROR", // the $ref left over is no operator
    });
  });
});

describe("findFractionals", () => {
  it("tells a fractional choosing the variant from one feeding an operator", () => {
    const rule = (fractional: Json) => ({ fractional });
    const targeting = {
      if: [rule([[true, 1]]), rule([["a", 1]]), { or: [rule([["b", 1]]), "c"] }],
    };
    expect(findFractionals(targeting).map((r) => [r.path, r.role])).toEqual([
      ["targeting.if[0]", "operand"],
      ["targeting.if[1]", "variant"],
      ["targeting.if[2].or[0]", "operand"],
    ]);
  });
});
