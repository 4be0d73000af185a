import { defineConfig } from "@playwright/test";
import { systemChromiumLaunchOptions } from "@statesync/playwright/chromium";

// `npm run test:e2e` here (after `npm run build`): the built app under `vite preview`, the
// system Chromium, and a throwaway nats-server per test from @statesync/playwright's fixtures.
// The repository's root suite (e2e/) runs these tests too.
const port = Number(process.env.PORT ?? 4174);

export default defineConfig({
  testDir: "./e2e",
  timeout: 45_000,
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    launchOptions: systemChromiumLaunchOptions(),
  },
  webServer: {
    command: `npx vite preview --port ${port} --strictPort`,
    url: `http://127.0.0.1:${port}`,
  },
});
