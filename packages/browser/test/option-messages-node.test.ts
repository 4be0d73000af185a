// @statesync/browser's openSynchronizer, run in Node (no Web Locks: no tabs; the `ws` package
// stands in for the browser's WebSocket): every wrong option is refused as "invalid
// openSynchronizer options", naming the option as written, whichever layer takes it.
import { openSynchronizer } from "@statesync/browser";
import { getFreePort } from "@statesync/node";
import WebSocket from "ws";
import { beforeAll, describe, expect, it } from "vitest";
import {
  openingError,
  openOptionKeys,
  wrongValueProblems,
} from "../../node/test/support/option-refusals.js";
import { openOptionsSchema } from "../src/open-options.js";
import { tally as counter } from "../../node/test/support/models.js";

let servers: string;
beforeAll(async () => {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  // Nothing listens: an opening that passes validation is offline.
  servers = `ws://127.0.0.1:${await getFreePort()}`;
});

async function refusal(options: Record<string, unknown>): Promise<unknown> {
  return openingError(() => openSynchronizer(options as never));
}

describe("browser openSynchronizer: every wrong option names openSynchronizer and the option", () => {
  it.each(openOptionKeys(openOptionsSchema.shape))("option %s", async (key) => {
    const base = { servers, stream: "OPTS", model: counter, snapshots: false, saveOnHide: false };
    const problems = await wrongValueProblems(key, base, refusal);
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
