import { describe, expect, it } from "vitest";
// From the sources, as the kit is: its error checks know the sources' error class.
import { MemoryPendingStore } from "../../src/pending/memory-pending-store.js";
import type { PendingStore } from "../../src/pending/pending-store.js";
import { checkOwners, type OwnersHarness } from "../../src/testing/pending-owners-conformance.js";

/**
 * The kit's own tests of its `owners` case: it passes for a correct store (in memory) and for
 * one without `owners`, and fails for stores whose listing creates queues, takes locks, misses
 * an empty queue or is not a function, so that a store which passes it can be looked at with it.
 */

/** A harness over one memory storage, its store's `owners` replaced (absent: none). */
function harness(owners?: (inner: MemoryPendingStore, key: string) => Promise<string[]>) {
  const inner = new MemoryPendingStore();
  const over = (store: MemoryPendingStore): PendingStore => ({
    open: (key, owner) => store.open(key, owner),
    ...(owners ? { owners: (key: string) => owners(store, key) } : {}),
  });
  return { store: over(inner), reopen: async () => over(inner.sibling()) } satisfies OwnersHarness;
}

describe("the owners case of the pending-store kit", () => {
  it("passes for a store in memory, and for a store without owners", async () => {
    const inner = new MemoryPendingStore();
    await checkOwners({ store: inner, reopen: async () => inner.sibling() });
    await checkOwners(harness());
  });

  const broken: Array<[string, OwnersHarness]> = [
    [
      "creates the queue of each key it looks at",
      harness(async (inner, key) => {
        await (await inner.open(key, "looked")).close();
        return inner.owners(key);
      }),
    ],
    [
      "opens each queue to look at it (a holder's lock refuses it)",
      harness(async (inner, key) => {
        const owners = await inner.owners(key);
        for (const owner of owners) await (await inner.open(key, owner)).close();
        return owners;
      }),
    ],
    [
      "lists only the owners with records",
      harness(async (inner, key) => {
        const withRecords: string[] = [];
        for (const owner of await inner.owners(key)) {
          const q = await inner.open(key, owner).catch(() => undefined);
          if (q === undefined || (await q.load()).records.length > 0) withRecords.push(owner);
          await q?.close();
        }
        return withRecords;
      }),
    ],
  ];
  for (const [name, h] of broken) {
    it(`fails for a store that ${name}`, async () => {
      await expect(checkOwners(h)).rejects.toThrow();
    });
  }

  it("fails for a store whose owners is not a function", async () => {
    const inner = new MemoryPendingStore();
    const store = { open: inner.open.bind(inner), owners: [] } as unknown as PendingStore;
    await expect(checkOwners({ store, reopen: async () => store })).rejects.toThrow(/function/);
  });
});
