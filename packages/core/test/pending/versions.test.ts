import {
  createSynchronizer,
  defineModel,
  encodeEntry,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  type StateSyncError,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";

/**
 * docs/versions.md for queued updates: a queue of an older model version is never dropped in
 * silence. When the log switches under it, its callers reject MODEL_UPGRADED and the records
 * stay stored; the upgraded app reads them as the log reads an old command (`upgradeCommand`),
 * or refuses them with an event (UPDATE_REFUSED, cause OUTDATED_COMMAND).
 */
const v1 = defineModel({
  name: "tags",
  version: 1,
  state: z.object({ ids: z.array(z.string()) }),
  initial: { ids: [] },
  commands: {
    add: { args: z.object({ id: z.string() }), apply: (d, a) => void d.ids.push(a.id) },
    old: { args: z.object({}), apply: () => undefined },
  },
});
const v2 = defineModel({
  name: "tags",
  version: 2,
  state: z.object({ ids: z.array(z.string()), tags: z.array(z.string()) }),
  initial: { ids: [], tags: [] },
  commands: {
    add: {
      args: z.object({ id: z.string() }),
      apply: (d: { ids: string[]; tags: string[] }, a: { id: string }) => void d.ids.push(a.id),
    },
  },
  predecessor: v1,
  migrate: (s: { ids: string[] }) => ({ ...s, tags: [] }),
  upgradeCommand: (c) => (c.name === "add" ? c : undefined),
});

describe("queued updates and model versions", () => {
  it("a switch under an older queue: MODEL_UPGRADED to its callers, records kept, read by the new version", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const pending = pendingQueue({ store, owner: "device" });
    const old = await createSynchronizer({ log, model: v1, pending, compaction: false });
    log.setOffline(true);
    const add = old.update("add", { id: "a" });
    const gone = old.updateUnconditionally("old", {});
    const outcomes = [add, gone].map((p) => p.catch((e: StateSyncError) => e.code));
    await Promise.all([add.queued, gone.queued]);
    // Meanwhile version 2 switched the log (as another app would have, while this one was away).
    log.injectRaw(
      encodeEntry({
        v: 2,
        kind: "switch",
        base: old.revision,
        ts: Date.now(),
        client: "v2-app",
        model: "tags",
        from: 1,
        version: 2,
        initialHash: v2.initialHash,
        state: { ids: [], tags: [] },
      }),
    );
    log.setOffline(false);
    expect(await Promise.all(outcomes)).toEqual(["MODEL_UPGRADED", "MODEL_UPGRADED"]);
    expect(old.status).toBe("stalled");
    expect(old.pendingCount).toBe(2); // kept, never dropped in silence
    await old.close();
    // The old app starts again: it refuses to open (MODEL_UPGRADED), its queue untouched.
    await expect(
      createSynchronizer({ log: log.handle(), model: v1, pending, compaction: false }),
    ).rejects.toMatchObject({ code: "MODEL_UPGRADED" });
    // The upgraded app reads the queue: "add" is upgraded, "old" is refused with an event.
    const upgraded = await createSynchronizer({
      log: log.handle(),
      model: v2,
      pending,
      compaction: false,
    });
    const refused: unknown[] = [];
    upgraded.on("refused", (e, u) =>
      refused.push([e.code, (e.cause as StateSyncError).code, u.command]),
    );
    await upgraded.flush();
    expect(upgraded.state).toEqual({ ids: ["a"], tags: [] });
    expect(refused).toEqual([["UPDATE_REFUSED", "OUTDATED_COMMAND", "old"]]);
    await upgraded.close();
  });

  it("an app rolled back refuses what a newer version queued, with an event", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const pending = pendingQueue({ store, owner: "device" });
    const first = await createSynchronizer({ log, model: v1, compaction: false });
    await first.close();
    const newer = await createSynchronizer({
      log: log.handle(),
      model: v2,
      pending,
      upgrade: "manual",
      compaction: false,
    });
    log.setOffline(true);
    const queued = newer.update("add", { id: "from-v2" });
    queued.catch(() => undefined);
    await queued.queued;
    await newer.close();
    log.setOffline(false);
    const older = await createSynchronizer({
      log: log.handle(),
      model: v1,
      pending,
      compaction: false,
    });
    const refused: unknown[] = [];
    older.on("refused", (e, u) =>
      refused.push([e.code, (e.cause as StateSyncError).code, u.command]),
    );
    await older.update("add", { id: "from-v1" });
    await older.flush();
    expect(refused).toEqual([["UPDATE_REFUSED", "OUTDATED_COMMAND", "add"]]);
    expect(older.state).toEqual({ ids: ["from-v1"] });
    await older.close();
  });
});
