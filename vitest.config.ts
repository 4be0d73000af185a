import { systemChromiumLaunchOptions } from "@statesync/playwright/chromium";
import { playwright } from "@vitest/browser-playwright";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Debian trixie's nats-server, fetched into .servers/ by scripts/fetch-nats-server.sh.
const TRIXIE_NATS_SERVER = fileURLToPath(
  new URL("./.servers/trixie/usr/sbin/nats-server", import.meta.url),
);
const SERVER_MATRIX_SETUP = "packages/node/test/support/server-matrix.ts";

// Tests import the built packages (`@statesync/*` resolve to dist/), so `npm test` builds first.
// Projects, one group after the other (two cores are enough for one at a time):
// - "node": every Node test, against the system's nats-server (Debian bookworm's 2.9.10 here);
// - "nats-2.10": the Node integration and fault suites again, on Debian trixie's nats-server
//   2.10.x (the server matrix; docs/servers.md says what differs between the two);
// - "browser": browser tests in the system Chromium (real IndexedDB) through Playwright.
// A failure's line names its project, so it says which server it was on.
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
          globalSetup: [SERVER_MATRIX_SETUP],
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "nats-2.10",
          include: [
            "packages/node/test/**/*.test.ts",
            "packages/browser/test/*-node.test.ts",
            // The CLI where it reads what the server says (stream configurations, advisories,
            // truncation, credentials, the live tail): its argument handling, output, model
            // loading and deep-state checks do not depend on the server, and run once ("node").
            ...[
              "backup",
              "compact-undone",
              "credentials",
              "info-history",
              "tail",
              "verify-compact",
              "compacted-meanwhile",
              "replayed-range",
            ].map((name) => `packages/cli/test/${name}.test.ts`),
          ],
          exclude: ["**/*.browser.test.{ts,tsx}", "**/node_modules/**"],
          env: { NATS_SERVER_BIN: TRIXIE_NATS_SERVER, STATESYNC_EXPECT_SERVER_VERSION: "2.10." },
          pool: "forks",
          maxWorkers: 2,
          globalSetup: [SERVER_MATRIX_SETUP],
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: "browser",
          include: ["packages/*/test/**/*.browser.test.{ts,tsx}"],
          // A nats-server with a WebSocket port, for the tests that need a live server.
          globalSetup: ["packages/browser/test/support/browser-server.ts"],
          // After the Node tests, not beside them.
          sequence: { groupOrder: 2 },
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
