import { describe, expect, it } from "vitest";
import { describeEvaluation, FlagEvaluator } from "../src/evaluate.js";
import { flagdConfigSchema, type FlagdConfig, type Json } from "../src/flagd-schema.js";
import { initialFlags } from "../src/flags.js";

const user = (attributes: Record<string, string>) => ({ targetingKey: "u-1", ...attributes });

/** The initial flags with `new-checkout` rolled out to `percent` % (as the rollOut command does). */
function rolledOut(percent: number): FlagdConfig {
  const flags = structuredClone(initialFlags);
  flags.flags["new-checkout"]!.targeting = {
    fractional: [
      ["on", percent],
      ["off", 100 - percent],
    ],
  };
  return flags;
}

describe("initial flags", () => {
  it("are a valid flagd configuration of at least ten flags", () => {
    expect(flagdConfigSchema.parse(initialFlags)).toEqual(initialFlags);
    expect(Object.keys(initialFlags.flags).length).toBeGreaterThanOrEqual(10);
  });
});

describe("FlagEvaluator", () => {
  const evaluator = new FlagEvaluator();
  const evaluate = (flag: string, context: Record<string, string>, fallback: Json) =>
    evaluator.evaluate(initialFlags, flag, { targetingKey: "u-1", ...context }, fallback);

  it("serves the default variant when no rule matches", () => {
    expect(evaluate("maintenance-mode", {}, true)).toMatchObject({ value: false, variant: "off" });
  });

  it("evaluates ends_with, then the fractional rule in the else branch", () => {
    expect(evaluate("new-checkout", { email: "eve@acme.dev" }, false).value).toBe(true);
    expect(evaluate("new-checkout", { email: "eve@example.com" }, false).value).toBe(false);
  });

  it("evaluates in (array membership) and ==", () => {
    expect(evaluate("checkout-button-color", { country: "de" }, "").value).toBe("#1565c0");
    expect(evaluate("checkout-button-color", { country: "us" }, "").value).toBe("#d32f2f");
    expect(evaluate("max-upload-mb", { plan: "enterprise" }, 0).value).toBe(1024);
    expect(evaluate("max-upload-mb", { plan: "pro" }, 0).value).toBe(100);
    expect(evaluate("max-upload-mb", { plan: "free" }, 0).value).toBe(10);
    expect(evaluate("beta-program", { email: "bob@example.com" }, {}).value).toEqual({
      features: ["ai-search", "bulk-edit"],
    });
  });

  it("evaluates sem_ver comparisons and ranges", () => {
    expect(evaluate("search-algorithm", { appVersion: "2.4.0" }, "").value).toBe("hybrid");
    expect(evaluate("search-algorithm", { appVersion: "2.3.9" }, "").value).toBe("bm25");
    const nl = { country: "nl" };
    expect(evaluate("payment-provider", { ...nl, appVersion: "3.2.1" }, "").value).toBe("adyen");
    expect(evaluate("payment-provider", { ...nl, appVersion: "4.0.0" }, "").value).toBe("stripe");
  });

  it("evaluates starts_with, !=, and, or", () => {
    const banner = (locale: string, plan: string) =>
      evaluate("homepage-banner", { locale, plan }, {}).variant;
    expect(banner("en-GB", "free")).toBe("spring-sale");
    expect(banner("en-GB", "enterprise")).toBe("none");
    expect(banner("de-DE", "free")).toBe("none");
    expect(evaluate("api-rate-limit-per-minute", { plan: "free" }, 0).value).toBe(600);
    expect(
      evaluator.evaluate(
        initialFlags,
        "api-rate-limit-per-minute",
        { targetingKey: "svc-billing" },
        0,
      ).value,
    ).toBe(6000);
    expect(evaluate("log-level", {}, "").value).toBe("info");
  });

  it("returns the application's fallback for disabled and unknown flags and wrong types", () => {
    expect(evaluate("dark-mode", {}, false)).toMatchObject({ value: false, reason: "DISABLED" });
    expect(evaluate("no-such-flag", {}, "x")).toMatchObject({
      value: "x",
      reason: "ERROR",
      errorCode: "FLAG_NOT_FOUND",
    });
    expect(evaluate("dark-mode", {}, "x").value).toBe("x");
    expect(evaluate("max-upload-mb", {}, "x")).toMatchObject({ errorCode: "TYPE_MISMATCH" });
  });

  it("buckets fractional rollouts deterministically by flag key and targetingKey", () => {
    const flags = rolledOut(30);
    const keys = Array.from({ length: 2000 }, (_, i) => `user-${i}`);
    const on = (e: FlagEvaluator) =>
      keys.filter((key) => e.evaluate(flags, "new-checkout", { targetingKey: key }, false).value);
    const first = on(evaluator);
    expect(first.length / keys.length).toBeGreaterThan(0.25);
    expect(first.length / keys.length).toBeLessThan(0.35);
    expect(on(new FlagEvaluator())).toEqual(first);
  });

  it("widening a rollout keeps the users already in it (10% ⊂ 50% ⊂ 100%)", () => {
    const keys = Array.from({ length: 500 }, (_, i) => `user-${i}`);
    const on = (percent: number) => {
      const flags = rolledOut(percent);
      return new Set(
        keys.filter(
          (key) => evaluator.evaluate(flags, "new-checkout", { targetingKey: key }, false).value,
        ),
      );
    };
    const [ten, fifty, all] = [on(10), on(50), on(100)];
    expect([...ten].every((key) => fifty.has(key))).toBe(true);
    expect(all.size).toBe(keys.length);
    expect(on(0).size).toBe(0);
  });

  it("buckets by the expression given as fractional's first argument", () => {
    const byEmail = (targetingKey: string, email: string) =>
      evaluator.evaluate(initialFlags, "recommendations-widget", { targetingKey, email }, false)
        .value;
    const emails = Array.from({ length: 200 }, (_, i) => `person-${i}@example.com`);
    for (const email of emails) expect(byEmail("a", email)).toBe(byEmail("b", email));
    expect(new Set(emails.map((email) => byEmail("a", email))).size).toBe(2);
  });

  it("reloads the configuration when it is given a new state object", () => {
    const e = new FlagEvaluator();
    const alice = user({ email: "alice@example.com" });
    expect(e.evaluate(rolledOut(0), "new-checkout", alice, false).value).toBe(false);
    expect(e.evaluate(rolledOut(100), "new-checkout", alice, false).value).toBe(true);
  });

  it("describes an evaluation by its variant, or its value without one", () => {
    expect(describeEvaluation(evaluate("new-checkout", { email: "x@acme.dev" }, false))).toBe("on");
    expect(describeEvaluation(evaluate("dark-mode", {}, false))).toBe("off");
  });
});
