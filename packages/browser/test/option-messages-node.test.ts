// @statesync/browser's openSynchronizer, run in Node (no Web Locks: no tabs; the `ws` package
// stands in for the browser's WebSocket): every wrong option is refused as "invalid
// openSynchronizer options", naming the option as written, whichever layer takes it.
import { defineModel, openSynchronizer } from "@statesync/browser";
import { getFreePort } from "@statesync/node";
import WebSocket from "ws";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { optionsSchema as coreOptionsSchema } from "../../core/src/engine/options.js";
import { jetStreamLogOptionsSchema } from "../../core/src/jetstream/jetstream-log-options.js";
import { refusalProblem, shown, wrongValues } from "../../node/test/support/option-refusals.js";
import { openOptionsSchema } from "../src/open-options.js";

const counter = defineModel({
  name: "counter",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: {},
});

/** Options of createSynchronizer / JetStreamLog that openSynchronizer makes itself. */
const internal = new Set(["log", "ownsLog", "onClose", "connectionErrors", "whyNotConnected"]);

let servers: string;
beforeAll(async () => {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  // Nothing listens: an opening that passes validation is offline.
  servers = `ws://127.0.0.1:${await getFreePort()}`;
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

describe("browser openSynchronizer: every wrong option names openSynchronizer and the option", () => {
  const keys = [
    ...new Set([
      ...Object.keys(openOptionsSchema.shape),
      ...Object.keys(coreOptionsSchema.shape),
      ...Object.keys(jetStreamLogOptionsSchema.shape),
    ]),
  ].filter((k) => !internal.has(k));

  it.each(keys)("option %s", async (key) => {
    const problems: string[] = [];
    for (const value of wrongValues) {
      const options: Record<string, unknown> = {
        servers,
        stream: "OPTS",
        model: counter,
        snapshots: false,
        saveOnHide: false,
        [key]: value,
      };
      if (key === "connection") delete options.servers;
      const error = await refusal(options);
      if (error === undefined) continue; // a value of the right type
      const problem = refusalProblem(error, "openSynchronizer", key);
      if (problem !== undefined) problems.push(`${shown(value)}: ${problem}`);
    }
    expect(problems).toEqual([]);
  });

  it("names paths inside an option, and a v3 connection without jetstream", async () => {
    const base = { servers, stream: "OPTS", model: counter, snapshots: false };
    const nested = (await refusal({ ...base, compaction: { everyEntries: 0 } })) as Error;
    expect(nested.message).toMatch(
      /^invalid openSynchronizer options: [^]*→ at compaction\.everyEntries$/,
    );
    // A v3 connection (status, closed, isClosed; no jetstream()) without `jetstream`.
    const v3 = { status: () => undefined, closed: async () => undefined, isClosed: () => false };
    const error = (await refusal({ ...base, servers: undefined, connection: v3 })) as Error;
    expect(error.message).toMatch(
      /^invalid openSynchronizer options: ✖ a nats\.js v3 connection needs @nats-io\/jetstream's functions[^]*→ at jetstream$/,
    );
  });
});
