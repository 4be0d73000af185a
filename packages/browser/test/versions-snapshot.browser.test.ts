import { IndexedDbSnapshotStore } from "@statesync/browser";
import { createSynchronizer, defineModel, MemoryLog, type Model } from "@statesync/core";
import { expect, it } from "vitest";
import { z } from "zod/v4";
import { dropDatabase, uniqueDatabase } from "./idb-helpers.js";

const v1 = defineModel({
  name: "tabs",
  version: 1,
  state: z.object({ ids: z.array(z.string()) }),
  initial: { ids: [] },
  commands: {
    add: {
      args: z.object({ id: z.string() }),
      apply(d, a) {
        d.ids.push(a.id);
      },
    },
  },
});
const v2 = defineModel({
  name: "tabs",
  version: 2,
  state: z.object({ ids: z.array(z.string()), tags: z.array(z.string()) }),
  initial: { ids: [], tags: [] },
  commands: {
    add: {
      args: z.object({ id: z.string() }),
      apply(d: { ids: string[]; tags: string[] }, a: { id: string }) {
        d.ids.push(a.id);
      },
    },
  },
  predecessor: v1,
  migrate: (s: { ids: string[] }) => ({ ...s, tags: [] }),
});

const open = <S>(log: MemoryLog, model: Model<S, any>, databaseName?: string) =>
  createSynchronizer({
    log: log.handle(),
    model,
    compaction: false,
    snapshotKey: "k",
    onError: () => undefined,
    ...(databaseName ? { snapshots: new IndexedDbSnapshotStore({ databaseName }) } : {}),
  });

/**
 * docs/versions.md, "Local snapshots": a stale tab of the version-1 app opens after the
 * version-2 app saved its snapshot in the same database. It is refused (MODEL_UPGRADED) and
 * leaves the version-2 snapshot alone, so the version-2 app replays only the tail.
 */
it("a stale version-1 tab keeps the version-2 tab's snapshot in IndexedDB", async () => {
  const databaseName = uniqueDatabase("versions");
  try {
    const log = new MemoryLog();
    const a1 = await open(log, v1);
    await a1.update("add", { id: "a" });
    await a1.close();
    const b2 = await open(log, v2, databaseName); // switches the log at open
    await b2.update("add", { id: "b" });
    await b2.close();
    const stale = await open(log, v1, databaseName).catch((e: { code?: string }) => e.code);
    expect(stale).toBe("MODEL_UPGRADED");
    const other = await open(log, v2);
    for (const id of ["c", "d"]) await other.update("add", { id });
    await other.close();
    const again = await open(log, v2, databaseName);
    expect(again.stats).toMatchObject({ snapshotsRestored: 1, entriesFetched: 2 });
    expect(again.state).toEqual({ ids: ["a", "b", "c", "d"], tags: [] });
    await again.close();
  } finally {
    await dropDatabase(databaseName);
  }
});
