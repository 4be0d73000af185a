import {
  MemoryLog,
  MemorySnapshotStore,
  type SnapshotRecord,
  type SnapshotStore,
  type StateSyncError,
} from "@statesync/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { open } from "./fixtures.js";

/**
 * A snapshot store whose writes (or deletes) hang while `held`: an IndexedDB transaction behind
 * another tab's that does not finish. What hangs is answered, in order, by `answer()`.
 */
function hangingStore(inner: SnapshotStore, what: "save" | "delete") {
  const waiting: Array<() => void> = [];
  const store = {
    held: false,
    calls: 0,
    /** The store answers what it held, and from now on at once. */
    answer() {
      store.held = false;
      for (const go of waiting.splice(0)) go();
    },
    load: (key: string) => inner.load(key),
    save(key: string, record: SnapshotRecord): Promise<void> {
      if (what !== "save") return inner.save(key, record);
      store.calls += 1;
      if (!store.held) return inner.save(key, record);
      return new Promise<void>((r) => waiting.push(r)).then(() => inner.save(key, record));
    },
    delete(key: string): Promise<void> {
      if (what !== "delete") return inner.delete(key);
      store.calls += 1;
      if (!store.held) return inner.delete(key);
      return new Promise<void>((r) => waiting.push(r)).then(() => inner.delete(key));
    },
  };
  return store;
}

/** How `p` ended, once it has: "resolved", or the error's code and details. */
function outcomeOf(p: Promise<unknown>): { value?: string } {
  const out: { value?: string } = {};
  p.then(
    () => (out.value = "resolved"),
    (e: StateSyncError) => (out.value = `${e.code} ${JSON.stringify(e.details)}`),
  );
  return out;
}

/** Far past any wait on a local store (fake time: nothing waits for it in real time). */
const LONG_MS = 60_000;

afterEach(() => {
  vi.useRealTimers();
});

describe("a snapshot store that stops answering", () => {
  it("saveSnapshot() rejects SNAPSHOT_FAILED; later saves do not wait for it; saving resumes once it answers", async () => {
    const log = new MemoryLog();
    const inner = new MemorySnapshotStore();
    const store = hangingStore(inner, "save");
    const sync = await open(log, { snapshots: store, compaction: false });
    await sync.update("increment", { by: 1 });
    await sync.saveSnapshot();
    expect((await inner.load("counter"))?.revision).toBe(sync.revision);
    vi.useFakeTimers();
    store.held = true;
    store.calls = 0;
    await sync.update("increment", { by: 1 });

    const first = outcomeOf(sync.saveSnapshot());
    const queued = outcomeOf(sync.saveSnapshot()); // behind the first, which hangs
    await vi.advanceTimersByTimeAsync(0);
    expect([first.value, queued.value]).toEqual([undefined, undefined]);
    await vi.advanceTimersByTimeAsync(LONG_MS);
    expect(first.value).toMatch(/^SNAPSHOT_FAILED \{"timedOut":true,"timeoutMs":\d+\}$/);
    expect(queued.value).toMatch(/^SNAPSHOT_FAILED .*"skipped":true/);
    expect(sync.errors.map((e) => e.code)).toEqual(["SNAPSHOT_FAILED"]);
    expect(sync.errors[0]!.message).toMatch(/did not answer within \d+ ms/);

    // While the store has not answered, a save is not sent to it and fails at once, with no
    // second event; updates go on.
    await sync.update("increment", { by: 1 });
    const later = outcomeOf(sync.saveSnapshot());
    await vi.advanceTimersByTimeAsync(0);
    expect(later.value).toMatch(/^SNAPSHOT_FAILED .*"skipped":true/);
    expect(store.calls).toBe(1);
    expect(sync.errors.length).toBe(1);

    // The store answers: the write that hung lands, then the current state is saved.
    store.answer();
    await vi.advanceTimersByTimeAsync(0);
    expect(store.calls).toBe(2);
    expect((await inner.load("counter"))?.revision).toBe(sync.revision);
    await sync.update("increment", { by: 1 });
    const resumed = outcomeOf(sync.saveSnapshot());
    await vi.advanceTimersByTimeAsync(0);
    expect(resumed.value).toBe("resolved");
    expect((await inner.load("counter"))?.revision).toBe(sync.revision);
    expect(sync.errors.length).toBe(1);
    vi.useRealTimers();
    await sync.close();
  });

  it("close() with a save that hangs ends after the wait, and no event comes after it", async () => {
    const log = new MemoryLog();
    const inner = new MemorySnapshotStore();
    const store = hangingStore(inner, "save");
    const sync = await open(log, { snapshots: store, compaction: false });
    await sync.update("increment", { by: 1 });
    vi.useFakeTimers();
    store.held = true;
    const saving = outcomeOf(sync.saveSnapshot());
    const events: string[] = [];
    sync.on("error", (e) => events.push(e.code));
    sync.on("status", (s) => events.push(s));
    const closing = outcomeOf(sync.close());
    await vi.advanceTimersByTimeAsync(LONG_MS);
    expect(closing.value).toBe("resolved");
    expect(saving.value).toMatch(/^SNAPSHOT_FAILED .*"timedOut":true/);
    expect(events).toEqual(["SNAPSHOT_FAILED", "closed"]);
    store.answer(); // answered after close(): nothing more happens
    await vi.advanceTimersByTimeAsync(LONG_MS);
    expect(events).toEqual(["SNAPSHOT_FAILED", "closed"]);
    expect(store.calls).toBe(1);
  });

  it("opening does not wait for ever for the deletion of a snapshot it discards", async () => {
    const inner = new MemorySnapshotStore();
    const old = await open(new MemoryLog(), { snapshots: inner });
    await old.update("increment", { by: 1 });
    await old.close(); // a snapshot of another log, which the next replica discards
    const store = hangingStore(inner, "delete");
    store.held = true;
    vi.useFakeTimers();
    const log = new MemoryLog();
    const opening = open(log, { snapshots: store, compaction: false });
    const opened = outcomeOf(opening);
    await vi.advanceTimersByTimeAsync(LONG_MS);
    expect(opened.value).toBe("resolved");
    const sync = await opening;
    expect(sync.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(store.calls).toBe(1);
    vi.useRealTimers();
    store.answer();
    await sync.close();
  });
});
