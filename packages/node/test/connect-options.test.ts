// Numbers in connectOptions that nats.js takes in silence and acts on badly are VALIDATION
// before anything connects. Before, a new user's trial: `connectOptions: { timeout: -1 }` (or 0)
// opened a replica that stayed offline for good against a healthy server, its error events
// reading "no server accepted a connection within -1 ms".
import { connectInBackground, connectNats, getFreePort, openSynchronizer } from "@statesync/node";
import { beforeAll, describe, expect, it } from "vitest";
import {
  acceptedConnectOptions,
  refusedConnectOptions,
  unknownConnectOptions,
} from "./support/connect-option-cases.js";
import { counter } from "./support/models.js";
import { openingError, refusedAt } from "./support/option-refusals.js";
import { useNatsServer } from "./helpers.js";

const ctx = useNatsServer();
let idle: string;
beforeAll(async () => {
  idle = `nats://127.0.0.1:${await getFreePort()}`; // nothing listens
});

async function open(servers: string, connectOptions: Record<string, unknown>): Promise<unknown> {
  const options = { servers, stream: "CONNECT_OPTIONS", model: counter, snapshots: false as const };
  return openingError(() =>
    openSynchronizer({ ...options, waitFor: "restored", connectOptions: connectOptions as never }),
  );
}

describe("Node: connectOptions", () => {
  it("refuses the numbers nats.js would act on badly, against a healthy server", async () => {
    for (const [options, key] of refusedConnectOptions) {
      const error = await open(ctx.server.url, options);
      expect(refusedAt(error, "openSynchronizer"), JSON.stringify(options)).toEqual([
        `connectOptions.${key}`,
      ]);
    }
  });

  it("says what the option takes", async () => {
    const error = (await open(ctx.server.url, { timeout: -1 })) as Error;
    expect(error.message).toBe(
      "invalid openSynchronizer options: ✖ timeout is at least 1 ms\n  → at connectOptions.timeout",
    );
  });

  it("refuses a typo, naming it", async () => {
    for (const key of unknownConnectOptions) {
      const error = (await open(idle, { [key]: 1_000 })) as Error;
      expect(error.message).toBe(
        `invalid openSynchronizer options: ✖ Unrecognized key: "${key}"\n  → at connectOptions`,
      );
    }
  });

  it("takes what nats.js documents (-1 reconnects for ever, 0 never)", async () => {
    for (const options of acceptedConnectOptions) {
      expect(await open(idle, options), JSON.stringify(options)).toBeUndefined();
    }
  });

  it("connectInBackground and connectNats refuse them too, before dialling", async () => {
    for (const [options, key] of refusedConnectOptions.filter(([o]) => !("port" in o))) {
      const given = { servers: ctx.server.url, ...options } as never;
      let thrown: unknown;
      try {
        const owned = connectInBackground(given);
        await owned.cancel();
      } catch (error) {
        thrown = error;
      }
      expect(refusedAt(thrown, "connectInBackground"), key).toEqual([key]);
      const rejected = await connectNats(given).then(
        async (nc) => {
          await nc.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(refusedAt(rejected, "connectNats"), key).toEqual([key]);
    }
    expect(() => connectInBackground({ servers: idle }, { silentMs: -1 })).toThrow(
      /^invalid connectInBackground settings: ✖ silentMs is at least 1 ms/,
    );
  });
});
