/**
 * globalSetup of the browser project (vitest.config.ts): one nats-server with a WebSocket port,
 * started in Node for the project's run and stopped after it, whose `ws://` URL the tests read
 * with `inject("natsWsUrl")` (a page cannot start a process). Tests that need a server down use
 * an address nobody listens on instead.
 */
import { startNatsServer } from "@statesync/node";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** `ws://127.0.0.1:<port>` of the project's nats-server. */
    natsWsUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startNatsServer();
  project.provide("natsWsUrl", server.wsUrl);
  return () => server.stop();
}
