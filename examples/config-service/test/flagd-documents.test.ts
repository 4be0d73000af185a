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
});
