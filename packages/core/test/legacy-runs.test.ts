import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createSynchronizer, defineModel, MemoryLog, type StateSyncError } from "@statesync/core";
import { until } from "./fixtures.js";
import { v1 } from "./version-models.js";

/**
 * A replica of a newer model version on a log still at the older one migrates the log's state to
 * show it. A trial (stop 33): it migrated and checked the whole state after every entry, one
 * entry at a time; with a state of a few thousand keys that cost about 13 ms an entry, so it fell
 * behind an older writer at about 300 updates a second for good, and wrote its switch only when
 * that writer stopped (10-22 s later). Runs of entries are now applied in one draft and their end
 * state migrated once (replay-runs.ts); a run whose end state fails to migrate is taken again
 * entry by entry, so the replica still stops before the first entry whose state fails.
 */

/** v2 of the `ids` model, counting its migrations, refusing states with `failFrom` ids or more. */
function v2Counting(failFrom = Infinity) {
  const counted = { migrations: 0 };
  const model = defineModel({
    name: "ids",
    version: 2,
    state: z.object({ ids: z.array(z.string()), tags: z.array(z.string()) }),
    initial: { ids: [], tags: [] },
    commands: {},
    predecessor: v1,
    migrate: (s: { ids: string[] }) => {
      counted.migrations += 1;
      if (s.ids.length >= failFrom) throw new Error(`${s.ids.length} ids are too many`);
      return { ...s, tags: [] };
    },
  });
  return { model, counted };
}

/** A v1 log of genesis and `n` unconditional adds (revisions 2 to n + 1). */
async function v1Log(n: number): Promise<MemoryLog> {
  const log = new MemoryLog();
  const writer = await createSynchronizer({ log: log.handle(), model: v1, compaction: false });
  // One at a time: one entry each (commands in flight together would share entries).
  for (let i = 0; i < n; i++) await writer.updateUnconditionally("add", { id: `i${i}` });
  await writer.close();
  return log;
}

describe("a newer version's replica on a log at the older one", () => {
  it("migrates once per run of entries, not once per entry", async () => {
    const log = await v1Log(400);
    const { model, counted } = v2Counting();
    const next = await createSynchronizer({ log, model, compaction: false, upgrade: "manual" });
    expect(next.revision).toBe(401);
    expect(next.state.ids).toHaveLength(400);
    expect(next.upgradePending).toBe(true);
    // Before: one migration per entry (400 and more). A catch-up reads in runs of up to 256.
    expect(counted.migrations).toBeLessThan(20);
    await next.close();
  });

  it("a live one migrates once per batch its follower received, not once per entry", async () => {
    const log = await v1Log(1);
    const { model, counted } = v2Counting();
    const next = await createSynchronizer({
      log: log.handle(),
      model,
      compaction: false,
      upgrade: "manual",
    });
    const writer = await createSynchronizer({ log: log.handle(), model: v1, compaction: false });
    const before = counted.migrations;
    await Promise.all(
      Array.from({ length: 200 }, (_, i) => writer.updateUnconditionally("add", { id: `b${i}` })),
    );
    await next.waitFor(writer.revision);
    expect(next.state.ids).toHaveLength(201);
    // Before: one per entry (200), the follower handing each entry on alone (reader.ts, 6).
    expect(counted.migrations - before).toBeLessThan(50);
    await Promise.all([writer.close(), next.close()]);
  });

  it("still stops before the first entry whose state fails to migrate", async () => {
    const log = await v1Log(40);
    const { model } = v2Counting(25); // the state after the 25th add (revision 26) fails
    const next = await createSynchronizer({
      log,
      model,
      compaction: false,
      upgrade: "manual",
      waitFor: "restored", // (with "synced" the opening rejects with the stall)
    });
    await until(() => next.status === "stalled");
    expect(next.revision).toBe(25);
    expect(next.state.ids).toHaveLength(24);
    expect((next.stallReason as StateSyncError).code).toBe("VALIDATION");
    expect((next.stallReason as StateSyncError).details.revision).toBe(26);
    await next.close();
  });
});
