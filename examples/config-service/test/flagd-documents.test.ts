import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FlagEvaluator } from "../src/evaluate.js";
import { flagdConfigSchema, type FlagdConfig } from "../src/flagd-schema.js";
import { flagdProblem } from "../src/flagd-validate.js";
import { flagsReplica, plainState } from "./support/replicas.js";

/** Documents flagd accepts (its strict parse), each of which the example must take as a whole. */
const VALID: Record<string, unknown> = {
  "a null defaultVariant": {
    flags: {
      f: { state: "ENABLED", variants: { on: true, off: false }, defaultVariant: null },
    },
  },
  "no defaultVariant": { flags: { f: { state: "ENABLED", variants: { a: 1, b: 2 } } } },
  "an empty defaultVariant": {
    flags: { f: { state: "ENABLED", variants: { a: 1 }, defaultVariant: "" } },
  },
  "names with spaces and unicode": {
    flags: { "my flag/ü": { state: "DISABLED", variants: { "a b": "x" }, defaultVariant: "a b" } },
  },
  "$evaluators and $ref": {
    $evaluators: { isPro: { "==": [{ var: "user.plan" }, "pro"] } },
    flags: {
      f: {
        state: "ENABLED",
        variants: { small: 1, big: 2 },
        defaultVariant: "small",
        targeting: { if: [{ $ref: "isPro" }, "big", null] },
      },
    },
  },
  "unknown properties": { flags: {}, generatedBy: { tool: "x" } },
};

describe("flagd documents", () => {
  for (const [name, document] of Object.entries(VALID)) {
    it(`takes a document with ${name}, as flagd does, and keeps it as given`, async () => {
      const text = JSON.stringify(document);
      expect(flagdProblem(text)).toBeUndefined();
      expect(flagdConfigSchema.safeParse(document).success).toBe(true);
      const sync = await flagsReplica(document as FlagdConfig);
      expect(plainState(sync)).toEqual(document);
    });
  }

  it("evaluates a flag without a default variant to the caller's default, reason DEFAULT", () => {
    const evaluator = new FlagEvaluator();
    for (const document of [VALID["a null defaultVariant"], VALID["no defaultVariant"]]) {
      const result = evaluator.evaluate(document as FlagdConfig, "f", {}, 42 as never);
      expect(result).toMatchObject({ value: 42, variant: undefined, reason: "DEFAULT" });
    }
  });

  it("refuses what flagd refuses, with flagd's reason, and appends nothing", async () => {
    const invalid = {
      "mixed kinds": { flags: { f: { state: "ENABLED", variants: { a: 1, b: "x" } } } },
      "an unknown operator": {
        flags: { f: { state: "ENABLED", variants: { a: 1 }, targeting: { nope: [1] } } },
      },
      "a missing default variant": {
        flags: { f: { state: "ENABLED", variants: { a: 1 }, defaultVariant: "zz" } },
      },
    };
    const expected = [/variants\/b must be/, /nope/, /Default variant zz missing/];
    const sync = await flagsReplica();
    const revision = sync.revision;
    for (const [i, document] of Object.values(invalid).entries()) {
      expect(flagdProblem(JSON.stringify(document))).toMatch(expected[i]!);
      const parsed = flagdConfigSchema.safeParse(document);
      expect(parsed.success).toBe(false);
      expect(parsed.error?.message).toMatch(expected[i]!);
      await expect(
        sync.update("replaceDocument", { document: document as FlagdConfig }),
      ).rejects.toMatchObject({ code: "VALIDATION" });
    }
    expect(sync.revision).toBe(revision);
  });

  it("evaluates with a nested evaluation context", () => {
    const document = VALID["$evaluators and $ref"] as FlagdConfig;
    const evaluator = new FlagEvaluator();
    const context = { targetingKey: "u", user: { plan: "pro", seats: [1, 2] } };
    expect(evaluator.evaluate(document, "f", context, 0)).toMatchObject({
      value: 2,
      variant: "big",
      reason: "TARGETING_MATCH",
    });
  });

  it("never refuses a document flagd accepts (random documents near flagd's shape)", () => {
    const anything = fc.jsonValue({ maxDepth: 2 });
    const name = fc.oneof(fc.constantFrom("a", "b", "on", "x y", "ü", ""), fc.string());
    const variantsOf = <T>(value: fc.Arbitrary<T>) => fc.dictionary(name, value, { maxKeys: 3 });
    const variants = fc.oneof(
      variantsOf(fc.boolean()),
      variantsOf(fc.integer()),
      variantsOf(fc.string()),
      variantsOf(fc.dictionary(fc.string(), anything, { maxKeys: 2 })),
      anything,
    );
    const targeting = fc.oneof(
      fc.constant({}),
      fc.constant({ if: [{ "==": [{ var: "a" }, 1] }, "a", null] }),
      fc.constant({
        fractional: [
          ["a", 50],
          ["b", 50],
        ],
      }),
      fc.constant({ $ref: "e" }),
      anything,
    );
    const primitive = fc.oneof(fc.string(), fc.integer(), fc.boolean());
    const metadata = fc.oneof(fc.dictionary(fc.string(), primitive, { maxKeys: 2 }), anything);
    const flag = fc.record(
      {
        state: fc.oneof(fc.constantFrom("ENABLED", "DISABLED"), anything),
        variants,
        defaultVariant: fc.oneof(name, fc.constant(null), anything),
        targeting,
        metadata,
        extra: anything,
      },
      { requiredKeys: [] },
    );
    const document = fc.record(
      {
        $schema: fc.oneof(fc.constant("https://flagd.dev/schema/v0/flags.json"), anything),
        $evaluators: fc.oneof(fc.constant({ e: { in: [{ var: "a" }, [1]] } }), anything),
        metadata,
        flags: fc.oneof(fc.dictionary(name, flag, { maxKeys: 3 }), anything),
        extra: anything,
      },
      { requiredKeys: [] },
    );
    let accepted = 0;
    fc.assert(
      fc.property(document, (doc) => {
        if (flagdProblem(JSON.stringify(doc)) !== undefined) return;
        accepted += 1;
        expect(flagdConfigSchema.safeParse(doc).error?.issues).toBeUndefined();
      }),
      { numRuns: 3000, seed: 9 },
    );
    expect(accepted).toBeGreaterThan(100); // the generator does reach valid documents
  });
});
