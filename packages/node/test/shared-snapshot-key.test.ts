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
    const open = (stream: string) =>
      openSynchronizer({
        onError: (e) => errors.push(e),
        servers: ctx.server.url,
        stream,
        model: counter,
        snapshotDir,
        snapshotKey: "same-key",
      });
    const first = await open(uniqueStream("KEY_A"));
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
  });
});
