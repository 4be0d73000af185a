import { getFreePort, openSynchronizer, StateSyncError, startNatsServer } from "@statesync/node";
import { beforeAll, describe, expect, it } from "vitest";
import { optionsSchema as coreOptionsSchema } from "../../core/src/engine/options.js";
import { jetStreamLogOptionsSchema } from "../../core/src/jetstream/jetstream-log-options.js";
import { openOptionsSchema } from "../src/open-synchronizer.js";
import { counter } from "./support/models.js";

// zod's own word for a failed union or an unlabelled z.custom: it names neither what the
// option accepts nor what to write (a new user's `snapshots: true`, `onError: "log"`).
const bare = /Invalid input(?!:)/;

/** Options of createSynchronizer / JetStreamLog that openSynchronizer makes itself. */
const internal = new Set(["log", "ownsLog", "onClose", "connectionErrors", "whyNotConnected"]);

const wrongValues: readonly unknown[] = [true, 7, "x", {}, [], () => 1];

let port: number;
beforeAll(async () => {
  port = await getFreePort(); // nothing listens: an opening that passes validation is offline
});

async function refusal(options: Record<string, unknown>): Promise<unknown> {
  try {
    const sync = await openSynchronizer(options as never);
    await sync.close();
    return undefined;
  } catch (error) {
    return error;
  }
}

describe("every wrong option value is refused in words that say what to write", () => {
  const keys = [
    ...new Set([
      ...Object.keys(openOptionsSchema.shape),
      ...Object.keys(coreOptionsSchema.shape),
      ...Object.keys(jetStreamLogOptionsSchema.shape),
    ]),
  ].filter((k) => !internal.has(k));

  it.each(keys)("openSynchronizer option %s", async (key) => {
    const problems: string[] = [];
    for (const value of wrongValues) {
      const options: Record<string, unknown> = {
        servers: `nats://127.0.0.1:${port}`,
        stream: "OPTS",
        model: counter,
        snapshots: false,
        waitFor: "restored",
        [key]: value,
      };
      if (key === "connection" || key === "connectOptions") delete options.servers;
      const error = await refusal(options);
      if (error === undefined) continue; // a value of the right type
      const shown = typeof value === "function" ? "a function" : JSON.stringify(value);
      if (!(error instanceof StateSyncError) || error.code !== "VALIDATION") {
        problems.push(`${shown}: not VALIDATION: ${String(error)}`);
      } else if (bare.test(error.message)) {
        problems.push(`${shown}: ${error.message}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("update options and startNatsServer options too", async () => {
    const sync = await openSynchronizer({
      servers: `nats://127.0.0.1:${port}`,
      stream: "OPTS",
      model: counter,
      snapshots: false,
      waitFor: "restored",
    });
    const messages: string[] = [];
    for (const bad of [{ signal: 7 }, { signal: "x" }]) {
      const error = await sync.update("increment", { by: 1 }, bad as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StateSyncError);
      messages.push((error as Error).message);
    }
    await sync.close();
    for (const bad of [{ jetstream: 7 }, { jetstream: true }, { extraConfig: 7 }]) {
      const error = await startNatsServer(bad as never).then(
        async (s) => {
          await s.stop();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(StateSyncError);
      messages.push((error as Error).message);
    }
    expect(messages.filter((m) => bare.test(m))).toEqual([]);
  });
});
