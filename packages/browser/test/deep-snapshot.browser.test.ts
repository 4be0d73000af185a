// A local snapshot in IndexedDB whose state nests deeper than MAX_STATE_DEPTH (a fresh-eyes trial
// tampered a Node snapshot file to 200,000 levels with its checksum recomputed: it was used, and
// every later save failed with a raw RangeError). The browser store shares core's check on load.
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex } from "@noble/hashes/utils.js";
import {
  createSynchronizer,
  defineModel,
  IndexedDbSnapshotStore,
  MAX_STATE_DEPTH,
  MemoryLog,
  type StateSyncError,
} from "@statesync/browser";
import { afterEach, expect, it } from "vitest";
import { z } from "zod";
import { dropDatabase, rawGet, rawPut, uniqueDatabase } from "./idb-helpers.js";
import { olderCommand } from "../../core/test/deep-models.js";

const tree = defineModel({
  name: "tree",
  state: z.object({ tree: z.any(), n: z.number().int() }),
  initial: { tree: [], n: 0 },
  commands: {
    setDepth: {
      args: z.object({ levels: z.number().int().positive() }),
      apply(d, { levels }) {
        let v: unknown[] = [];
        for (let i = 1; i < levels; i++) v = [v];
        d.tree = v;
      },
    },
    bump: {
      args: z.object({}),
      apply(d) {
        d.n += 1;
      },
    },
  },
});

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

async function open(log: MemoryLog, store: IndexedDbSnapshotStore) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log,
    model: tree,
    snapshots: store,
    compaction: false,
    onError: (e) => errors.push(e),
  });
  return Object.assign(sync, { errors });
}

it("a stored state 200,000 levels deep is CORRUPT_SNAPSHOT at load, and a deeper state is never saved", async () => {
  const databaseName = uniqueDatabase("deep");
  cleanup.push(() => dropDatabase(databaseName));
  const log = new MemoryLog();
  const store = new IndexedDbSnapshotStore({ databaseName });
  const a = await open(log, store);
  await a.update("bump", {});
  await a.saveSnapshot();
  await a.close();

  const stored = await rawGet(databaseName, "tree");
  const record = JSON.parse(stored.body);
  record.state.tree = "DEEP";
  const depth = 200_000;
  const body = JSON.stringify(record).replace('"DEEP"', "[".repeat(depth) + "]".repeat(depth));
  await rawPut(databaseName, "tree", {
    ...stored,
    body,
    sha256: bytesToHex(sha256(new TextEncoder().encode(body))),
  });

  const b = await open(log, new IndexedDbSnapshotStore({ databaseName }));
  expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
  expect(b.errors[0]!.message).toContain(`deeper than ${MAX_STATE_DEPTH} levels`);
  expect(b.stats.snapshotsRestored).toBe(0);
  expect(b.state).toEqual({ tree: [], n: 1 });

  // An older SDK's command (format 2, unchecked): this SDK's refuse a state that deep.
  await b.waitFor(log.injectRaw(olderCommand("setDepth", { levels: 300 })));
  const failed = await b.saveSnapshot().catch((e: StateSyncError) => e);
  expect((failed as StateSyncError).code).toBe("SNAPSHOT_FAILED");
  expect((failed as StateSyncError).message).toContain(`deeper than ${MAX_STATE_DEPTH} levels`);
  await b.updateUnconditionally("setDepth", { levels: 3 });
  await b.saveSnapshot();
  await b.close();
  expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT", "SNAPSHOT_FAILED"]);
});
