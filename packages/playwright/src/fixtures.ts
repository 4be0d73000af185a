import { test as base, type Fixtures } from "@playwright/test";
import {
  openSynchronizer,
  startNatsServer,
  type CommandMap,
  type NatsServer,
  type OpenSynchronizerOptions,
  type StartNatsServerOptions,
  type StateSynchronizer,
} from "@statesync/node";

/** Opens a Node replica on the test's server (see {@link StatesyncFixtures.openNodeSynchronizer}). */
export type OpenNodeSynchronizer = <S, C extends CommandMap<S>>(
  options: Omit<OpenSynchronizerOptions<S, C>, "servers" | "connection"> & { servers?: string },
) => Promise<StateSynchronizer<S, C>>;

/** Test fixtures that {@link statesyncFixtures} adds. */
export interface StatesyncFixtures {
  /** Options of the test's server (`startNatsServer`); set with `test.use({ natsServerOptions })`. */
  natsServerOptions: StartNatsServerOptions;
  /**
   * A throwaway nats-server (JetStream, WebSocket listener) started for this test and stopped
   * after it: `url` for Node clients, `wsUrl` for pages, `stop/restart/kill` for fault tests.
   */
  natsServer: NatsServer;
  /**
   * Opens a replica with `@statesync/node`'s `openSynchronizer` on {@link natsServer} (no
   * snapshots unless given) and closes it after the test.
   */
  openNodeSynchronizer: OpenNodeSynchronizer;
}

/**
 * The fixtures as an object, to add to your own `test` with `base.extend(statesyncFixtures)`
 * (or use the ready-made {@link test}). Each test gets its own server, so tests that stop or
 * restart it do not disturb others; starting one takes a fraction of a second.
 */
export const statesyncFixtures: Fixtures<StatesyncFixtures> = {
  natsServerOptions: [{}, { option: true }],
  natsServer: async ({ natsServerOptions }, use) => {
    const server = await startNatsServer(natsServerOptions);
    try {
      await use(server);
    } finally {
      await server.stop();
    }
  },
  openNodeSynchronizer: async ({ natsServer }, use) => {
    const opened: Array<StateSynchronizer<any, any>> = [];
    const open: OpenNodeSynchronizer = async (options) => {
      const sync = await openSynchronizer({
        snapshots: false,
        ...options,
        servers: options.servers ?? natsServer.url,
      } as OpenSynchronizerOptions<any, any>);
      opened.push(sync);
      return sync;
    };
    try {
      await use(open);
    } finally {
      await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
    }
  },
};

/** `@playwright/test`'s `test` with {@link statesyncFixtures}. */
export const test = base.extend<StatesyncFixtures>(statesyncFixtures);
