import { IndexedDbSnapshotStore, type SnapshotStoreWarning } from "@statesync/browser";
import { runSnapshotStoreConformance } from "@statesync/core/testing";
import { expect } from "vitest";
import { dropDatabase, rawGet, rawPut, uniqueDatabase } from "./idb-helpers.js";

// The same suite as MemorySnapshotStore and FileSnapshotStore, on the real IndexedDB of Chromium.
runSnapshotStoreConformance("IndexedDbSnapshotStore", async () => {
  const databaseName = uniqueDatabase("conformance");
  const warnings: SnapshotStoreWarning[] = [];
  const store = new IndexedDbSnapshotStore({ databaseName, onWarning: (w) => warnings.push(w) });
  return {
    store,
    corrupt: async (key) => {
      const value = await rawGet(databaseName, key);
      const body = value.body as string;
      const i = Math.floor(body.length / 2);
      await rawPut(databaseName, key, {
        ...value,
        body: body.slice(0, i) + "#" + body.slice(i + 1),
      });
    },
    teardown: async () => {
      expect(warnings).toEqual([]);
      await dropDatabase(databaseName);
    },
  };
});
