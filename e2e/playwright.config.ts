import { defineConfig } from "@playwright/test";
import { getFreePort } from "@statesync/node";
import { systemChromiumLaunchOptions } from "@statesync/playwright/chromium";

// The multi-client suite: real Chromium (the system one, never a downloaded build), the BUILT
// board app served by `vite preview`, and a throwaway nats-server per test (the `natsServer`
// fixture of @statesync/playwright). Run with `npm run test:e2e` after `npm run build`.
//
// The preview port is chosen once, in the runner process; workers inherit it through the
// environment, so every process of one run agrees on it.
process.env.E2E_PREVIEW_PORT ??= String(await getFreePort());
const port = Number(process.env.E2E_PREVIEW_PORT);
const baseURL = `http://127.0.0.1:${port}`;

export default defineConfig({
  fullyParallel: true,
  workers: 2,
  timeout: 45_000,
  expect: { timeout: 15_000 },
  forbidOnly: !!process.env.CI,
  reporter: [["list"]],
  outputDir: "../test-results/e2e",
  use: {
    baseURL,
    browserName: "chromium",
    launchOptions: systemChromiumLaunchOptions(),
    trace: "retain-on-failure",
  },
  webServer: {
    command: `npx vite preview --port ${port} --strictPort`,
    cwd: "../examples/collab-board",
    url: baseURL,
    reuseExistingServer: false,
    stdout: "ignore",
  },
  projects: [
    { name: "e2e", testDir: "./tests" },
    // The example's own short test (what its README shows) runs in the same pass.
    { name: "example", testDir: "../examples/collab-board/e2e" },
  ],
});
