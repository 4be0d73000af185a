import { MemoryPendingStore, StateSyncError, type PendingStore } from "@statesync/core";
import { afterEach, describe, expect, it } from "vitest";
import { openQueueSlot } from "../src/tabs/queue-slot.js";

/** A `sessionStorage` of one tab (kept across its reloads). */
function tabStorage(): Storage {
  const items = new Map<string, string>();
  return {
    getItem: (k: string) => items.get(k) ?? null,
    setItem: (k: string, v: string) => void items.set(k, v),
  } as Storage;
}

/** `store`, but `held` slots answer QUEUE_LOCKED until released, as the page that left would. */
function withHeld(store: PendingStore, held: Set<string>): PendingStore {
  return {
    open: (key, owner) =>
      held.has(owner)
        ? Promise.reject(new StateSyncError("QUEUE_LOCKED", `${owner} is held`))
        : store.open(key, owner),
    close: () => store.close?.() ?? Promise.resolve(),
  };
}

const g = globalThis as { sessionStorage?: Storage };
afterEach(() => {
  delete g.sessionStorage;
});

describe("openQueueSlot: a reloaded tab gets its own slot back", () => {
  it("waits for the slot it held while the page that left still holds its lock", async () => {
    g.sessionStorage = tabStorage();
    const memory = new MemoryPendingStore();
    const first = await openQueueSlot(memory, "k", "app"); // another tab: app-0
    const mine = await openQueueSlot(memory, "k", "app"); // this tab: app-1
    expect([first.owner, mine.owner]).toEqual(["app-0", "app-1"]);
    // This tab reloads: the new page opens while the old one still holds app-1 for 200 ms;
    // app-2 is free at once, but holds none of this tab's queued edits.
    setTimeout(() => {
      void mine.store.open("k", "app-1").then((q) => q.close());
    }, 200);
    const again = await openQueueSlot(memory, "k", "app");
    expect(again.owner).toBe("app-1");
  });

  it("takes the first free slot when the one it held stays taken, or when it held none", async () => {
    g.sessionStorage = tabStorage();
    const memory = new MemoryPendingStore();
    await openQueueSlot(memory, "k", "app"); // app-0, remembered
    const store = withHeld(memory, new Set(["app-0"]));
    expect((await openQueueSlot(store, "k", "app", 100)).owner).toBe("app-1");
    delete g.sessionStorage;
    expect((await openQueueSlot(memory, "k", "app")).owner).toBe("app-2");
  });
});
