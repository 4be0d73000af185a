import {
  test as base,
  type BrowserContext,
  type BrowserContextOptions,
  type Fixtures,
  type Page,
  type PlaywrightTestArgs,
  type PlaywrightTestOptions,
  type PlaywrightWorkerArgs,
  type PlaywrightWorkerOptions,
} from "@playwright/test";
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
  /**
   * Opens a browser context (a browser profile of its own: its own IndexedDB, BroadcastChannel
   * and Web Locks, so its pages are tabs of one profile and share one connection) with
   * `browser.newContext(options)` (the test runner applies the config's `use` options, `baseURL`
   * and the rest, under them), and closes it after the test, however the test ended. Contexts
   * opened with `browser.newContext()` are not closed by Playwright: their apps stay open and
   * keep reconnecting into later tests (a trial: a later test's failure screenshot showed an
   * earlier test's page).
   */
  newContext: (options?: BrowserContextOptions) => Promise<BrowserContext>;
  /**
   * Opens a page in a context of its own (another profile, as `browser.newPage()`: pages opened
   * so are separate users, not tabs of one), closed after the test (see {@link newContext}).
   */
  newPage: (options?: BrowserContextOptions) => Promise<Page>;
}

/**
 * The fixtures as an object, to add to your own `test` with `base.extend(statesyncFixtures)`
 * (or use the ready-made {@link test}). Each test gets its own server, so tests that stop or
 * restart it do not disturb others; starting one takes a fraction of a second.
 */
export const statesyncFixtures: Fixtures<
  StatesyncFixtures,
  object,
  PlaywrightTestArgs & PlaywrightTestOptions,
  PlaywrightWorkerArgs & PlaywrightWorkerOptions
> = {
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
  newContext: async ({ browser }, use) => {
    const opened: BrowserContext[] = [];
    try {
      await use(async (options) => {
        const context = await browser.newContext(options);
        opened.push(context);
        return context;
      });
    } finally {
      await Promise.all(opened.map((c) => c.close().catch(() => undefined)));
    }
  },
  newPage: async ({ newContext }, use) => {
    await use(async (options) => (await newContext(options)).newPage());
  },
};

/** `@playwright/test`'s `test` with {@link statesyncFixtures}. */
export const test = base.extend<StatesyncFixtures>(statesyncFixtures);
