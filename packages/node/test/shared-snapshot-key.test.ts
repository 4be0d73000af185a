import { openSynchronizer, type StateSyncError } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { uniqueStream, useNatsServer } from "./helpers.js";
import { counter } from "./support/models.js";

/**
 * Two states given one `snapshotKey` (in one snapshot directory): the second finds the first's
 * snapshot, refuses it (CORRUPT_SNAPSHOT) and says that it belongs to another log. Before, the
 * message said "the log was recreated since it was written", which sent a trial's user looking
 * for a deleted stream (a fresh-eyes trial, stop 27).
 */
const ctx = useNatsServer();

describe("a snapshotKey two streams share", () => {
  it("is reported as another log's snapshot, and the state comes from the log", async () => {
    const snapshotDir = join(ctx.dir, "shared-key-snapshots");
    const errors: StateSyncError[] = [];
    const open = (stream: string, waitFor: "synced" | "restored" = "synced") =>
      openSynchronizer({
        waitFor,
        onError: (e) => errors.push(e),
        servers: ctx.server.url,
        stream,
        model: counter,
        snapshotDir,
        snapshotKey: "same-key",
      });
    const streamA = uniqueStream("KEY_A");
    const first = await open(streamA);
    await first.update("increment", { by: 5 });
    await first.close(); // saves its snapshot under "same-key"
    const second = await open(uniqueStream("KEY_B"));
    try {
      const refused = errors.find((e) => e.code === "CORRUPT_SNAPSHOT");
      expect(refused?.message).toMatch(/written for another log \(jetstream:KEY_A_/);
      expect(refused?.message).toMatch(/do two states share this snapshotKey\?/);
      expect(refused?.message).not.toMatch(/recreated/);
      expect(second.state.count).toBe(0); // its own log's state, not the other's
    } finally {
      await second.close();
    }
    // Opened without waiting for the log, a third stream never serves the first's state: the
    // snapshot names another stream, which the log knows without asking the server (before, it
    // served count 5 until the log answered: a fresh-eyes trial, stop 30).
    await (await open(streamA)).close(); // the first stream's snapshot again
    errors.length = 0;
    const third = await open(uniqueStream("KEY_C"), "restored");
    try {
      expect(third.state.count).toBe(0);
      expect(errors.map((e) => e.message)).toEqual([
        expect.stringMatching(/written for another log \(jetstream:KEY_A_.*, not jetstream:KEY_C_/),
      ]);
      await third.synced();
      expect(third.state.count).toBe(0);
    } finally {
      await third.close();
    }
  });
});
