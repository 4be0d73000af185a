import type { FlagdConfig } from "./flagd-schema.js";

/**
 * The initial flag definitions: a flagd flag definition file, as flagd itself would read it
 * (`JSON.stringify(initialFlags)` is a valid `flags.json`).
 */
export const initialFlags: FlagdConfig = {
  $schema: "https://flagd.dev/schema/v0/flags.json",
  metadata: { flagSetId: "shop", version: "1" },
  flags: {
    // Employees first, then a percentage rollout that the admin widens 10% → 50% → 100%.
    "new-checkout": {
      state: "ENABLED",
      variants: { on: true, off: false },
      defaultVariant: "off",
      targeting: {
        if: [
          { ends_with: [{ var: "email" }, "@acme.dev"] },
          "on",
          {
            fractional: [
              ["on", 0],
              ["off", 100],
            ],
          },
        ],
      },
    },
    "dark-mode": {
      state: "DISABLED",
      variants: { on: true, off: false },
      defaultVariant: "on",
    },
    "checkout-button-color": {
      state: "ENABLED",
      variants: { red: "#d32f2f", green: "#2e7d32", blue: "#1565c0" },
      defaultVariant: "red",
      targeting: { if: [{ in: [{ var: "country" }, ["de", "at", "ch"]] }, "blue", null] },
    },
    "search-algorithm": {
      state: "ENABLED",
      variants: { bm25: "bm25", vector: "vector", hybrid: "hybrid", legacy: "lucene-4" },
      defaultVariant: "bm25",
      targeting: { if: [{ sem_ver: [{ var: "appVersion" }, ">=", "2.4.0"] }, "hybrid", null] },
    },
    "max-upload-mb": {
      state: "ENABLED",
      variants: { small: 10, medium: 100, large: 1024 },
      defaultVariant: "small",
      targeting: {
        if: [
          { "==": [{ var: "plan" }, "enterprise"] },
          "large",
          { "==": [{ var: "plan" }, "pro"] },
          "medium",
          null,
        ],
      },
    },
    "api-rate-limit-per-minute": {
      state: "ENABLED",
      variants: { standard: 600, elevated: 6000 },
      defaultVariant: "standard",
      targeting: {
        if: [
          {
            or: [
              { "==": [{ var: "plan" }, "enterprise"] },
              { starts_with: [{ var: "targetingKey" }, "svc-"] },
            ],
          },
          "elevated",
          null,
        ],
      },
    },
    "homepage-banner": {
      state: "ENABLED",
      variants: {
        none: { show: false },
        "spring-sale": { show: true, headline: "Spring sale: 20% off", discountPercent: 20 },
      },
      defaultVariant: "none",
      targeting: {
        if: [
          {
            and: [
              { starts_with: [{ var: "locale" }, "en"] },
              { "!=": [{ var: "plan" }, "enterprise"] },
            ],
          },
          "spring-sale",
          null,
        ],
      },
    },
    "payment-provider": {
      state: "ENABLED",
      variants: { stripe: "stripe", adyen: "adyen" },
      defaultVariant: "stripe",
      targeting: {
        if: [
          {
            and: [
              { in: [{ var: "country" }, ["nl", "be"]] },
              { sem_ver: [{ var: "appVersion" }, "^", "3.0.0"] },
            ],
          },
          "adyen",
          null,
        ],
      },
    },
    // Buckets by email rather than by targetingKey (fractional's optional first argument).
    "recommendations-widget": {
      state: "ENABLED",
      variants: { on: true, off: false },
      defaultVariant: "off",
      targeting: { fractional: [{ var: "email" }, ["on", 25], ["off", 75]] },
    },
    "maintenance-mode": {
      state: "ENABLED",
      variants: { on: true, off: false },
      defaultVariant: "off",
    },
    "log-level": {
      state: "ENABLED",
      variants: { debug: "debug", info: "info", warn: "warn" },
      defaultVariant: "info",
      targeting: { if: [{ starts_with: [{ var: "targetingKey" }, "canary-"] }, "debug", null] },
    },
    "beta-program": {
      state: "ENABLED",
      variants: { none: { features: [] }, early: { features: ["ai-search", "bulk-edit"] } },
      defaultVariant: "none",
      targeting: {
        if: [{ in: [{ var: "email" }, ["bob@example.com", "dana@example.com"]] }, "early", null],
      },
    },
  },
};
