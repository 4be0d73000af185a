/**
 * The pending-store conformance case of `PendingStore.owners` (optional): the owners of a key
 * whose queue the store holds, read only. The browser's drain of dead tabs' slots looks with it
 * rather than opening every slot, which created the queue of each (a new user's trial: 32
 * empty IndexedDB rows for one tab).
 */
import { expect, it } from "vitest";
import { isStateSyncError } from "../errors.js";
import type { PendingRecord, PendingStore } from "../pending/pending-store.js";

/** The harness hooks this case uses (see `PendingStoreHarness`). */
export interface OwnersHarness {
  store: PendingStore;
  reopen(): Promise<PendingStore>;
}

const record: PendingRecord = {
  format: 1,
  seq: 1,
  kind: "update",
  name: "add",
  args: {},
  queuedAt: 1_700_000_000_000,
  mv: 1,
};

const sorted = async (owners: Promise<string[]>) => [...(await owners)].sort();

/**
 * A store with `owners`: it lists every owner of the key opened before (with records or not,
 * held now or not), no other key's, from another instance too; and looking creates nothing and
 * takes no lock: an owner never opened is listed by no later look, and a holder's lock holds.
 * A bad key is `VALIDATION`. A store without it (callers then open each owner) has no member of
 * that name at all, not one of another kind.
 */
export async function checkOwners(h: OwnersHarness): Promise<void> {
  const { store } = h;
  if (!("owners" in store) || store.owners === undefined) {
    expect(store.owners, "owners: a function or absent").toBeUndefined();
    return;
  }
  expect(typeof store.owners, "owners: a function or absent").toBe("function");
  expect(await store.owners("k")).toEqual([]);
  const empty = await store.open("k", "empty");
  await empty.close();
  const held = await store.open("k", "held");
  await held.put(record);
  const apart = await store.open("k.other", "apart");
  await apart.close();
  expect(await sorted(store.owners("k"))).toEqual(["empty", "held"]);
  expect(await store.owners("k.other")).toEqual(["apart"]);
  expect(await store.owners("never")).toEqual([]);
  // Read only: what was looked at is not created, and the holder's lock still holds.
  expect(await store.owners("never")).toEqual([]);
  let locked: unknown;
  await store.open("k", "held").then(
    (q) => q.close(),
    (e: unknown) => (locked = e),
  );
  expect(isStateSyncError(locked, "QUEUE_LOCKED"), "the holder's lock still holds").toBe(true);
  const other = await h.reopen();
  expect(await sorted(other.owners!("k"))).toEqual(["empty", "held"]);
  let refused: unknown;
  await other.owners!("").catch((e: unknown) => (refused = e));
  expect(isStateSyncError(refused, "VALIDATION"), "an empty key").toBe(true);
  await other.close?.();
  await held.close();
}

/** Registers the `owners` case (called inside the suite's `describe`): {@link checkOwners}. */
export function ownersCases(
  withStore: (fn: (h: OwnersHarness) => Promise<void>) => Promise<void>,
): void {
  it("lists the owners of a key it holds queues of, read only, where it has owners()", () =>
    withStore(checkOwners));
}
