// keepSnapshotCurrent (issue 10, case 9): the local snapshot follows every applied batch, one
// save at a time, the newest state next; nothing waits for close() or for snapshotEvery.
import {
  createSynchronizer,
  keepSnapshotCurrent,
  MemoryLog,
  MemorySnapshotStore,
  type SnapshotRecord,
} from "@statesync/browser";
import { afterEach, expect, it, vi } from "vitest";
import { tally as counter } from "../../node/test/support/models.js";

/** A memory store that records its saves, can hold them at a gate, and counts overlaps. */
class WatchedStore extends MemorySnapshotStore {
  readonly saved: number[] = [];
  running = 0;
  mostAtOnce = 0;
  private gate: Promise<void> | undefined;
  private open: (() => void) | undefined;

  hold(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }
  release(): void {
    this.open?.();
    this.gate = undefined;
  }
  override async save(key: string, record: SnapshotRecord): Promise<void> {
    this.running += 1;
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running);
    try {
      await this.gate;
      await super.save(key, record);
      this.saved.push(record.revision);
    } finally {
      this.running -= 1;
    }
  }
}

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

async function replica(store: WatchedStore, log = new MemoryLog()) {
  const sync = await createSynchronizer({
    log,
    model: counter,
    snapshots: store,
    snapshotEvery: 0,
    compaction: false,
  });
  const stop = keepSnapshotCurrent(sync);
  closing.push(async () => {
    stop();
    await sync.close();
  });
  return { sync, stop, log };
}

const storedRevision = async (store: WatchedStore) => (await store.load("counter"))?.revision;

it("saves the latest state shortly after each update, without close or snapshotEvery", async () => {
  const store = new WatchedStore();
  const { sync } = await replica(store);
  for (let i = 0; i < 3; i++) await sync.update("add", { by: 1 });
  await vi.waitFor(async () => expect(await storedRevision(store)).toBe(sync.revision));
  expect(sync.state.n).toBe(3);
});

it("follows entries other replicas write too", async () => {
  const store = new WatchedStore();
  const { log } = await replica(store);
  const writer = await createSynchronizer({ log, model: counter, snapshots: false });
  closing.push(() => writer.close());
  for (let i = 0; i < 5; i++) await writer.updateUnconditionally("add", { by: 2 });
  await vi.waitFor(async () => expect(await storedRevision(store)).toBe(writer.revision));
});

it("runs one save at a time and coalesces the batches applied meanwhile into one save", async () => {
  const store = new WatchedStore();
  store.hold();
  const { sync } = await replica(store);
  await vi.waitFor(() => expect(store.running).toBe(1));
  for (let i = 0; i < 20; i++) await sync.update("add", { by: 1 });
  expect(store.running).toBe(1);
  store.release();
  await vi.waitFor(async () => expect(await storedRevision(store)).toBe(sync.revision));
  // The save held at the gate, then one save of the newest state.
  expect(store.saved).toEqual([1, sync.revision]);
  expect(store.mostAtOnce).toBe(1);
});

it("stops saving when stopped", async () => {
  const store = new WatchedStore();
  const { sync, stop } = await replica(store);
  await sync.update("add", { by: 1 });
  await vi.waitFor(async () => expect(await storedRevision(store)).toBe(sync.revision));
  stop();
  const before = store.saved.length;
  await sync.update("add", { by: 1 });
  await sync.update("add", { by: 1 });
  // A save would start right after the batch: give it the same turns it would have had.
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(store.saved.length).toBe(before);
});
