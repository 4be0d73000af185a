import { MemoryLog, MemorySnapshotStore } from "@statesync/core";
import { runRevisionedLogConformance, runSnapshotStoreConformance } from "@statesync/core/testing";

runRevisionedLogConformance("MemoryLog", async () => {
  const log = new MemoryLog();
  return {
    log,
    openAnother: async () => log.handle(),
    openSibling: async () => new MemoryLog(),
    recreate: async () => {
      log.recreate();
      return log.handle();
    },
  };
});

runSnapshotStoreConformance("MemorySnapshotStore", async () => {
  const store = new MemorySnapshotStore();
  return { store, corrupt: async (key) => store.corrupt(key) };
});
