import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

/**
 * `npm run soak`: the soak test only (soak.soak.ts, which the default `*.test.ts` pattern leaves
 * out). Tests import the built packages, so the script builds first.
 */
export default defineConfig({
  root: fileURLToPath(new URL("../../../../", import.meta.url)),
  test: {
    include: ["packages/node/test/faults/*.soak.ts"],
    testTimeout: 20 * 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    reporters: ["default"],
  },
});
