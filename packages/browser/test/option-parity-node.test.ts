// The browser's openSynchronizer takes "the same options and behaviour as the Node one"
// (README): an option of both that Node refuses, the browser refuses too, at the same path and in
// the same words. Before, a new user's trial: `snapshots: true`, `{}` or "idb" threw a raw
// `TypeError: e.load is not a function` in the browser, `null` read as "no snapshots", and a
// store without `save` passed. Both run here in Node (the `ws` package stands in for the
// browser's WebSocket; nothing listens, so an opening that passes validation is offline).
import {
  createSynchronizer,
  MemoryLog,
  openSynchronizer as openInBrowser,
  StateSyncError,
} from "@statesync/browser";
import { getFreePort, openSynchronizer as openInNode } from "@statesync/node";
import WebSocket from "ws";
import { beforeAll, describe, expect, it } from "vitest";
import { zodIssues } from "../../node/test/support/option-refusals.js";
import { tally as counter } from "../../node/test/support/models.js";

let port: number;
beforeAll(async () => {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  port = await getFreePort();
});

const fn = async () => undefined;
/** Wrong values of the options both runtimes take alike, and a few right ones. */
const values: Record<string, unknown[]> = {
  snapshots: [
    true,
    {},
    "idb",
    null,
    7,
    [],
    fn,
    { load: fn }, // no save, no delete: a TypeError at the first save
    { load: fn, save: fn }, // no delete
    { load: fn, save: fn, delete: fn, close: "x" },
    { load: fn, save: fn, delete: fn }, // a store
    false,
  ],
  connectOptions: [null, 7, "x", [], fn, {}, { user: "u", pass: "p" }],
  jetstream: [null, 7, {}, { jetstream: fn }],
};

/** What a refusal says, as `[path: message]` issues; "opened" when it opened. */
async function outcome(
  open: (options: never) => Promise<{ close(): Promise<void> }>,
  options: Record<string, unknown>,
): Promise<string[] | "opened"> {
  try {
    const sync = await open(options as never);
    await sync.close();
    return "opened";
  } catch (error) {
    expect(error).toBeInstanceOf(StateSyncError);
    expect((error as StateSyncError).code).toBe("VALIDATION");
    expect((error as Error).message).toMatch(/^invalid openSynchronizer options: /);
    return zodIssues(error);
  }
}

describe("an option of both runtimes is refused alike in Node and the browser", () => {
  const base = { stream: "PARITY", model: counter, snapshots: false, waitFor: "restored" };
  it.each(Object.keys(values))("%s", async (key) => {
    const differences: string[] = [];
    for (const value of values[key]!) {
      const node = await outcome(openInNode, {
        ...base,
        servers: `nats://127.0.0.1:${port}`,
        [key]: value,
      });
      const browser = await outcome(openInBrowser, {
        ...base,
        servers: `ws://127.0.0.1:${port}`,
        saveOnHide: false,
        [key]: value,
      });
      // The words may differ after a ";" where the runtimes differ (where the default store is).
      const gist = (o: string[] | "opened") =>
        o === "opened" ? o : o.map((issue) => issue.replace(/; leave it out for .*$/, ""));
      if (JSON.stringify(gist(node)) !== JSON.stringify(gist(browser))) {
        differences.push(
          `${JSON.stringify(value) ?? "a function"}: node ${JSON.stringify(node)}, browser ${JSON.stringify(browser)}`,
        );
      }
    }
    expect(differences).toEqual([]);
  });

  it("the browser's snapshots message says what to write, as Node's does", async () => {
    for (const snapshots of [true, {}, "idb", null, { load: fn }]) {
      const issues = await outcome(openInBrowser, {
        ...base,
        servers: `ws://127.0.0.1:${port}`,
        snapshots,
      });
      expect(issues, JSON.stringify(snapshots)).toEqual([
        "snapshots: snapshots must be a SnapshotStore, or false for none; leave it out for IndexedDB (an IndexedDbSnapshotStore)",
      ]);
    }
  });

  it("createSynchronizer refuses a store without save or delete too", async () => {
    for (const snapshots of [{ load: fn }, { load: fn, save: fn }]) {
      const error = await createSynchronizer({
        log: new MemoryLog(),
        model: counter,
        snapshots: snapshots as never,
      }).then(
        async (sync) => {
          await sync.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(zodIssues(error)).toEqual([
        "snapshots: snapshots must be a SnapshotStore, or false for none",
      ]);
    }
  });
});
