// The browser's connectOptions and connectInBackground refuse the numbers nats.ws would act on
// badly, as Node's do (run in Node: the `ws` package stands in for the browser's WebSocket).
// Before, `connectOptions: { timeout: -1 }` (or 0) opened a replica that stayed offline for good
// against a healthy server.
import { connectInBackground, openSynchronizer } from "@statesync/browser";
import { getFreePort, startNatsServer, type NatsServer } from "@statesync/node";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  acceptedConnectOptions,
  refusedConnectOptions,
  unknownConnectOptions,
} from "../../node/test/support/connect-option-cases.js";
import { openingError, refusedAt } from "../../node/test/support/option-refusals.js";
import { tally as counter } from "../../node/test/support/models.js";

let server: NatsServer;
let healthy: string;
let idle: string;
beforeAll(async () => {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  const wsPort = await getFreePort();
  server = await startNatsServer({ wsPort });
  healthy = `ws://127.0.0.1:${wsPort}`;
  idle = `ws://127.0.0.1:${await getFreePort()}`; // nothing listens
});
afterAll(async () => {
  await server?.stop();
});

async function open(servers: string, connectOptions: Record<string, unknown>): Promise<unknown> {
  const options = { servers, stream: "CONNECT_OPTIONS", model: counter, snapshots: false as const };
  return openingError(() =>
    openSynchronizer({ ...options, saveOnHide: false, connectOptions: connectOptions as never }),
  );
}

describe("browser: connectOptions", () => {
  it("refuses the numbers nats.ws would act on badly, against a healthy server", async () => {
    for (const [options, key] of refusedConnectOptions) {
      const error = await open(healthy, options);
      expect(refusedAt(error, "openSynchronizer"), JSON.stringify(options)).toEqual([
        `connectOptions.${key}`,
      ]);
    }
    const error = (await open(healthy, { timeout: 0 })) as Error;
    expect(error.message).toBe(
      "invalid openSynchronizer options: ✖ timeout is at least 1 ms\n  → at connectOptions.timeout",
    );
  });

  it("refuses a typo, naming it, and takes what nats.ws documents", async () => {
    for (const key of unknownConnectOptions) {
      expect(((await open(idle, { [key]: 1_000 })) as Error).message).toBe(
        `invalid openSynchronizer options: ✖ Unrecognized key: "${key}"\n  → at connectOptions`,
      );
    }
    for (const options of acceptedConnectOptions) {
      expect(await open(idle, options), JSON.stringify(options)).toBeUndefined();
    }
  });

  it("connectInBackground refuses them before dialling", async () => {
    for (const [options, key] of refusedConnectOptions.filter(([o]) => !("port" in o))) {
      let thrown: unknown;
      try {
        const owned = connectInBackground({ servers: healthy, ...options } as never);
        await owned.cancel();
      } catch (error) {
        thrown = error;
      }
      expect(refusedAt(thrown, "connectInBackground"), key).toEqual([key]);
    }
  });
});
