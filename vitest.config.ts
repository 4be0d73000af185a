import { defineConfig } from "vitest/config";

// Tests import the built packages (`@statesync/*` resolve to dist/), so `npm test` builds first.
export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "examples/*/test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
    reporters: ["default"],
  },
});
