import { MemoryLog, MemoryPendingStore, MemorySnapshotStore } from "@statesync/core";
import {
  runPendingStoreConformance,
  runRevisionedLogConformance,
  runSnapshotStoreConformance,
} from "@statesync/core/testing";

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
    openClosable: async () => {
      const own = log.handle();
      return { log: own, closeConnection: async () => own.closeConnection() };
    },
  };
});

runSnapshotStoreConformance("MemorySnapshotStore", async () => {
  const store = new MemorySnapshotStore();
  return { store, corrupt: async (key) => store.corrupt(key) };
});

runPendingStoreConformance("MemoryPendingStore", async () => {
  let store = new MemoryPendingStore();
  return {
    store,
    durable: false,
    reopen: async () => store.sibling(),
    crash: async () => (store = store.crashed()),
    corrupt: async (key, owner, seq) => store.corrupt(key, owner, seq),
  };
});
