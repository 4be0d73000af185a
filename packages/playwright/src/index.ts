/**
 * `@statesync/playwright`: helpers for multi-client Playwright tests of statesync apps, run in
 * the Playwright test runner (Node):
 * - fixtures: a throwaway nats-server per test (`natsServer`) and Node replicas on it
 *   (`openNodeSynchronizer`), as `statesyncFixtures` or a ready `test`;
 * - `waitForConvergence`: waits until pages (whose app called `exposeSynchronizer` from
 *   `@statesync/browser`) and Node replicas reach the same revision and state;
 * - `holdWebSockets`: keeps a page's WebSockets from reaching the server until released;
 * - `systemChromiumLaunchOptions`: drive an installed Chromium (also at `./chromium`, import-free).
 */
export {
  test,
  statesyncFixtures,
  type StatesyncFixtures,
  type OpenNodeSynchronizer,
} from "./fixtures.js";
export {
  waitForConvergence,
  probe,
  type SyncClient,
  type ConvergenceOptions,
  type Converged,
} from "./convergence.js";
export { holdWebSockets, type HeldWebSockets } from "./hold-websockets.js";
export { systemChromiumLaunchOptions, SYSTEM_CHROMIUM_ARGS } from "./chromium.js";
export { expect } from "@playwright/test";
export type { SyncProbe } from "@statesync/browser";
