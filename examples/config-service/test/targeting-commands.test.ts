import { describe, expect, it } from "vitest";
import { FlagEvaluator } from "../src/evaluate.js";
import type { Flag, FlagdConfig } from "../src/flagd-schema.js";
import { FlagCommandError } from "../src/flags-model.js";
import { flagsReplica, plainState } from "./support/replicas.js";

const boolVariants = { on: true, off: false };

function document(flags: Record<string, Flag>, evaluators?: FlagdConfig["$evaluators"]) {
  return { ...(evaluators ? { $evaluators: evaluators } : {}), flags } as FlagdConfig;
}

/** Every reason flag `key` evaluates to for users u-0 .. u-199 with `context`. */
function reasons(
  state: FlagdConfig,
  key: string,
  context: Record<string, string>,
  fallback: boolean | number = false,
) {
  const evaluator = new FlagEvaluator();
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    seen.add(
      evaluator.evaluate(state, key, { targetingKey: `u-${i}`, ...context }, fallback).reason,
    );
  }
  return seen;
}

/** Expects `run` to reject with a FlagCommandError matching `message` and to write nothing. */
async function expectRefused(
  sync: Awaited<ReturnType<typeof flagsReplica>>,
  run: () => Promise<unknown>,
  message: RegExp,
) {
  const before = { revision: sync.revision, state: plainState(sync) };
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FlagCommandError);
  expect((error as Error).message).toMatch(message);
  expect(sync.revision).toBe(before.revision);
  expect(plainState(sync)).toEqual(before.state);
}

describe("rollOut", () => {
  it("refuses a fractional rule that decides an if condition instead of rewriting its buckets", async () => {
    const sync = await flagsReplica(
      document({
        f: {
          state: "ENABLED",
          variants: boolVariants,
          defaultVariant: "off",
          targeting: {
            if: [
              {
                fractional: [
                  [false, 0],
                  [true, 100],
                ],
              },
              "on",
              "off",
            ],
          },
        },
      }),
    );
    await expectRefused(
      sync,
      () => sync.update("rollOut", { flag: "f", variant: "on", percent: 10 }),
      /fractional rule at targeting\.if\[0\] feeds a condition/,
    );
  });

  it("refuses several candidate rules, computed buckets, and a rule inside $evaluators", async () => {
    const fractional = {
      fractional: [
        ["on", 50],
        ["off", 50],
      ],
    };
    const sync = await flagsReplica(
      document(
        {
          two: {
            state: "ENABLED",
            variants: boolVariants,
            defaultVariant: "off",
            targeting: { if: [{ "==": [{ var: "a" }, 1] }, fractional, fractional] },
          },
          computed: {
            state: "ENABLED",
            variants: boolVariants,
            defaultVariant: "off",
            targeting: {
              fractional: [
                [{ var: "pick" }, 50],
                ["off", 50],
              ],
            },
          },
          shared: {
            state: "ENABLED",
            variants: boolVariants,
            defaultVariant: "off",
            targeting: { $ref: "half" },
          },
        },
        { half: fractional },
      ),
    );
    const rollOut = (flag: string) => () =>
      sync.update("rollOut", { flag, variant: "on", percent: 10 });
    await expectRefused(sync, rollOut("two"), /2 fractional rules choosing its variant/);
    await expectRefused(sync, rollOut("computed"), /computes its variant with an expression/);
    await expectRefused(
      sync,
      rollOut("shared"),
      /without a fractional rule \(rules in \$evaluators/,
    );
  });

  it("rolls out a flag without a default variant: the rest get the caller's default", async () => {
    const sync = await flagsReplica(
      document({ f: { state: "ENABLED", variants: { a: "A", b: "B" }, defaultVariant: null } }),
    );
    await sync.update("rollOut", { flag: "f", variant: "b", percent: 30 });
    expect(plainState(sync).flags["f"]!.targeting).toEqual({
      fractional: [
        ["b", 30],
        [null, 70],
      ],
    });
    const evaluator = new FlagEvaluator();
    const served = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const result = evaluator.evaluate(plainState(sync), "f", { targetingKey: `u-${i}` }, "-");
      served.add(`${result.reason}:${result.value}`);
    }
    expect(served).toEqual(new Set(["TARGETING_MATCH:B", "DEFAULT:-"]));
  });
});

describe("removeVariant", () => {
  it("refuses a variant a fractional bucket computed from a var may still serve", async () => {
    const sync = await flagsReplica(
      document({
        f: {
          state: "ENABLED",
          variants: { on: true, off: false, beta: true },
          defaultVariant: "off",
          targeting: {
            fractional: [
              [{ var: "cohort" }, 50],
              ["off", 50],
            ],
          },
        },
      }),
    );
    expect(reasons(plainState(sync), "f", { cohort: "beta" })).not.toContain("ERROR");
    await expectRefused(
      sync,
      () => sync.update("removeVariant", { flag: "f", variant: "beta" }),
      /computes the variant it serves \("var" at targeting\.fractional\[0\]\[0\]\)/,
    );
    expect(reasons(plainState(sync), "f", { cohort: "beta" })).not.toContain("ERROR");
  });

  it("refuses a variant served through $ref or as a boolean result, allows unrelated ones", async () => {
    const sync = await flagsReplica(
      document(
        {
          viaRef: {
            state: "ENABLED",
            variants: { small: 1, big: 2, pro: 3 },
            defaultVariant: "small",
            targeting: { if: [{ "==": [{ var: "plan" }, "pro"] }, { $ref: "big" }, null] },
          },
          viaBoolean: {
            state: "ENABLED",
            variants: { true: "yes", false: "no", maybe: "?" },
            defaultVariant: "maybe",
            targeting: { "==": [{ var: "plan" }, "pro"] },
          },
        },
        { big: { if: [true, "big"] } },
      ),
    );
    const remove = (flag: string, variant: string) => () =>
      sync.update("removeVariant", { flag, variant });
    await expectRefused(sync, remove("viaRef", "big"), /still in use: its targeting serves it/);
    await expectRefused(
      sync,
      remove("viaBoolean", "true"),
      /still in use: its targeting serves it/,
    );
    // "pro" only appears as a value compared with, never as a result
    await sync.update("removeVariant", { flag: "viaRef", variant: "pro" });
    expect(Object.keys(plainState(sync).flags["viaRef"]!.variants)).toEqual(["small", "big"]);
    expect(reasons(plainState(sync), "viaRef", { plan: "pro" }, 0)).toEqual(
      new Set(["TARGETING_MATCH"]),
    );
  });
});

describe("every flag command", () => {
  it("edits flags that already serve a missing variant without being blamed for it", async () => {
    const sync = await flagsReplica(
      document({
        broken: {
          state: "ENABLED",
          variants: boolVariants,
          defaultVariant: "off",
          targeting: { if: [{ var: "x" }, "gone", null] },
        },
      }),
    );
    await sync.update("setFlagState", { flag: "broken", state: "DISABLED" });
    expect(plainState(sync).flags["broken"]!.state).toBe("DISABLED");
  });

  it("adds a variant to a flag without default, of its variants' kind only", async () => {
    const sync = await flagsReplica(document({ f: { state: "ENABLED", variants: { a: 1 } } }));
    await sync.update("addVariant", { flag: "f", variant: "b", value: 2 });
    await expectRefused(
      sync,
      () => sync.update("addVariant", { flag: "f", variant: "c", value: [3] }),
      /a variant is a boolean, a string, a number or an object/,
    );
    await expectRefused(
      sync,
      () => sync.update("addVariant", { flag: "f", variant: "c", value: "3" }),
      /number values/,
    );
    await sync.update("setDefaultVariant", { flag: "f", variant: null });
    expect(plainState(sync).flags["f"]).toMatchObject({
      variants: { a: 1, b: 2 },
      defaultVariant: null,
    });
  });
});
