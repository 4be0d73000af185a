// A second tab, as a worker (its own thread): it opens the queue `owner` of `key` and loads it,
// and its thread is busy for `busyMs` while the load's transaction is under way (a tab whose main
// thread re-applied a long queue: a browser trial). Posts "busy" as it starts, then what it
// loaded: how many records, whether the queue stayed durable, and the store's warnings.
import { IndexedDbPendingStore } from "../../src/indexeddb-pending-store.js";

self.onmessage = async (event: MessageEvent) => {
  const { databaseName, key, owner, busyMs } = event.data as {
    databaseName: string;
    key: string;
    owner: string;
    busyMs: number;
  };
  const warnings: string[] = [];
  const store = new IndexedDbPendingStore({
    databaseName,
    onWarning: (w) => warnings.push(String(w)),
  });
  const queue = await store.open(key, owner);
  const loading = queue.load(); // its transaction starts here, and waits for this thread
  self.postMessage("busy");
  const until = Date.now() + busyMs;
  while (Date.now() < until) {
    // the thread is busy
  }
  const loaded = await loading;
  self.postMessage({ loaded: loaded.records.length, durable: queue.durable, warnings });
  await queue.close();
  await store.close();
};
