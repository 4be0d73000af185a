import { systemChromiumLaunchOptions } from "@statesync/playwright/chromium";
import { playwright } from "@vitest/browser-playwright";
import { defineConfig } from "vitest/config";

// Tests import the built packages (`@statesync/*` resolve to dist/), so `npm test` builds first.
// Two projects: Node tests (against real nats-server processes) and browser tests, which run in
// the system Chromium (real IndexedDB) through Playwright.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ["default"],
    projects: [
      {
        extends: true,
        test: {
          name: "node",
          include: [
            "packages/*/test/**/*.test.ts",
            "examples/*/test/**/*.test.ts",
            "bench/test/**/*.test.ts",
          ],
          exclude: ["**/*.browser.test.{ts,tsx}", "**/node_modules/**"],
          pool: "forks",
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "browser",
          include: ["packages/*/test/**/*.browser.test.{ts,tsx}"],
          // After the Node tests, not beside them: two cores are enough for one at a time.
          sequence: { groupOrder: 1 },
          browser: {
            enabled: true,
            headless: true,
            provider: playwright({ launchOptions: systemChromiumLaunchOptions() }),
            instances: [{ browser: "chromium" }],
          },
        },
      },
    ],
  },
});
