// A ~4 MB state in Chromium (issue 10, case 9): with keepSnapshotCurrent, the snapshot is saved
// while updates keep coming and a new replica restores exactly the latest state. The long tasks
// seen meanwhile are printed, not asserted (bench/src/browser-snapshots.ts measures them).
import {
  createSynchronizer,
  defineModel,
  IndexedDbSnapshotStore,
  keepSnapshotCurrent,
  MemoryLog,
  stateHash,
} from "@statesync/browser";
import { afterEach, expect, it, vi } from "vitest";
import { z } from "zod";
import { dropDatabase, rawGet, uniqueDatabase } from "./idb-helpers.js";

const entity = z.object({ title: z.string(), body: z.string(), v: z.number() });
const buckets: Record<string, Record<string, z.infer<typeof entity>>> = {};
for (let b = 0; b < 64; b++) {
  const bucket: Record<string, z.infer<typeof entity>> = {};
  for (let e = 0; e < 300; e++) {
    bucket[`e${e}`] = { title: `entity ${b}/${e}`, body: `${"lorem ipsum ".repeat(14)}${e}`, v: 0 };
  }
  buckets[`b${b}`] = bucket;
}

const big = defineModel({
  name: "big",
  state: z.object({ buckets: z.record(z.string(), z.record(z.string(), entity)) }),
  initial: { buckets },
  commands: {
    touch: {
      args: z.object({ n: z.number().int().nonnegative() }),
      apply(draft, { n }) {
        const item = draft.buckets[`b${n % 64}`]?.[`e${Math.floor(n / 64) % 300}`];
        if (item) item.v += 1;
      },
    },
  },
});

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

it("saves a 4 MB state while updates keep coming, and a new replica restores the latest", async () => {
  expect(JSON.stringify(big.initial).length).toBeGreaterThan(4_000_000);
  const databaseName = uniqueDatabase("big");
  cleanup.push(() => dropDatabase(databaseName));
  const longTasks: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) longTasks.push(Math.round(entry.duration));
  });
  observer.observe({ type: "longtask" });
  cleanup.push(async () => observer.disconnect());

  const log = new MemoryLog();
  const store = new IndexedDbSnapshotStore({ databaseName });
  const sync = await createSynchronizer({ log, model: big, snapshots: store, snapshotEvery: 0 });
  const stop = keepSnapshotCurrent(sync);
  const writer = await createSynchronizer({ log, model: big, snapshots: false, compaction: false });
  for (let n = 0; n < 300; n++) await writer.updateUnconditionally("touch", { n });
  await sync.waitFor(writer.revision);
  const key = sync.model.name;
  await vi.waitFor(
    async () => expect((await rawGet(databaseName, key))?.revision).toBe(sync.revision),
    {
      timeout: 30_000,
    },
  );
  console.log(
    `4 MB state: ${sync.stats.snapshotsSaved} saves; long tasks (ms): [${longTasks.join(", ")}]`,
  );
  expect(sync.stats.snapshotsSaved).toBeGreaterThan(0);
  stop();
  await Promise.all([writer.close(), sync.close()]);

  const reopened = await createSynchronizer({
    log,
    model: big,
    snapshots: new IndexedDbSnapshotStore({ databaseName }),
    waitFor: "restored",
  });
  cleanup.push(() => reopened.close());
  expect(reopened.stats.snapshotsRestored).toBe(1);
  expect(reopened.revision).toBe(writer.revision);
  expect(stateHash(reopened.state)).toBe(stateHash(writer.state));
});
