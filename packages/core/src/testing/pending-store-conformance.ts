import { describe, expect, it } from "vitest";
import { MAX_NESTING_DEPTH } from "../entry-limits.js";
import { isStateSyncError } from "../errors.js";
import { originSchema, type PendingRecord, type PendingStore } from "../pending/pending-store.js";
import { damagedRecordCases } from "./pending-damaged-conformance.js";
import { ownersCases } from "./pending-owners-conformance.js";
import { pendingArgumentCases } from "./store-arguments.js";

/** What a {@link runPendingStoreConformance} factory returns for one test. */
export interface PendingStoreHarness {
  store: PendingStore;
  /** Whether the store's queues are durable (what `PendingQueue.durable` must say). */
  durable: boolean;
  /**
   * Another store over the same storage, as another process (or a restart) sees it; locks held
   * through `store` still hold against it.
   */
  reopen(): Promise<PendingStore>;
  /**
   * A store over the same storage after every holder died without closing (a killed process):
   * their locks are taken over by the next `open`.
   */
  crash(): Promise<PendingStore>;
  /** Damages the stored record `seq` of `(key, owner)` so that `load` must leave it out. */
  corrupt(key: string, owner: string, seq: number): Promise<void>;
  /**
   * Damages the record as `corrupt` does, and makes the storage refuse to move it aside or
   * delete it (for files: a directory in the way of the name it is moved to); resolves to a
   * function that lifts that. Only for stores that can leave a damaged record in place
   * (`DamagedPendingRecord.leftInPlace`); without it the kit checks that the store never says so.
   */
  corruptImmovable?(key: string, owner: string, seq: number): Promise<() => Promise<void>>;
  teardown?(): Promise<void>;
}

/** A pending record for tests. */
function record(seq: number, args: unknown = { n: seq }, kind: "update" | "command" = "update") {
  return {
    format: 1,
    seq,
    kind,
    name: "add",
    args,
    queuedAt: 1_700_000_000_000 + seq,
    mv: 1,
  } satisfies PendingRecord;
}

/** Arrays `levels` deep (`[[[]]]` is 3), built without recursion. */
function nested(levels: number): unknown[] {
  let v: unknown[] = [];
  for (let i = 1; i < levels; i++) v = [v];
  return v;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  return undefined;
}

/**
 * The conformance suite every {@link PendingStore} passes. Call it from a vitest test file with
 * a factory that returns a fresh, empty storage for each test.
 */
export function runPendingStoreConformance(
  name: string,
  factory: () => Promise<PendingStoreHarness>,
): void {
  describe(`PendingStore conformance: ${name}`, () => {
    async function withStore(fn: (h: PendingStoreHarness) => Promise<void>): Promise<void> {
      const h = await factory();
      try {
        await fn(h);
      } finally {
        await h.store.close?.();
        await h.teardown?.();
      }
    }

    it("opens an empty queue with a valid origin, nextSeq 1 and the store's durability", () =>
      withStore(async ({ store, durable }) => {
        const q = await store.open("s/k", "app");
        expect(originSchema.safeParse(q.origin).success).toBe(true);
        expect(q.durable).toBe(durable);
        expect(await q.load()).toEqual({ records: [], nextSeq: 1 });
        await q.close();
      }));

    it("round-trips records by ascending seq, as fresh copies", () =>
      withStore(async ({ store }) => {
        const q = await store.open("s/k", "app");
        const args = { text: "ü€😀", list: [1, null, { t: true }], f: 1.5 };
        await q.put(record(2, args, "command"));
        await q.put(record(1));
        await q.put(record(3));
        const { records, nextSeq } = await q.load();
        expect(records).toEqual([record(1), record(2, args, "command"), record(3)]);
        expect(nextSeq).toBe(4);
        (records[0]!.args as { n: number }).n = 99;
        expect((await q.load()).records[0]).toEqual(record(1));
        await q.close();
      }));

    it("keeps each record's origin, and its absence (records of older SDKs), across a reopen", () =>
      withStore(async ({ store, reopen }) => {
        const q = await store.open("s/k", "app");
        const tagged = (seq: number, origin: string) => ({ ...record(seq), origin });
        await q.put(record(1)); // as an older SDK stored it: the queue's origin applies
        await q.put(tagged(2, "session-a"));
        await q.put(tagged(3, "session-b"));
        const bad = await rejection(q.put(tagged(4, "has space")));
        expect(isStateSyncError(bad, "VALIDATION")).toBe(true);
        await q.close();
        const other = await reopen();
        const q2 = await other.open("s/k", "app");
        const { records } = await q2.load();
        expect(records).toEqual([record(1), tagged(2, "session-a"), tagged(3, "session-b")]);
        expect("origin" in records[0]!).toBe(false);
        await q2.close();
        await other.close?.();
      }));

    it("keeps each record's log identity, and its absence (records of older SDKs), across a reopen; a put binding one replaces it", () =>
      withStore(async ({ store, reopen }) => {
        const q = await store.open("s/k", "app");
        const bound = (seq: number, logIdentity: string) => ({ ...record(seq), logIdentity });
        const identity = "jetstream:S:s.k@2026-01-01T00:00:00.123456789Z";
        await q.put(record(1)); // queued before the log was known, or by an older SDK
        await q.put(bound(2, identity));
        await q.put(record(3));
        await q.put(bound(3, "memory-7-abc")); // the engine stores a binding made later
        const bad = await rejection(q.put(bound(4, "")));
        expect(isStateSyncError(bad, "VALIDATION")).toBe(true);
        await q.close();
        const other = await reopen();
        const q2 = await other.open("s/k", "app");
        const { records } = await q2.load();
        expect(records).toEqual([record(1), bound(2, identity), bound(3, "memory-7-abc")]);
        expect("logIdentity" in records[0]!).toBe(false);
        await q2.close();
        await other.close?.();
      }));

    it("keeps records, origin and nextSeq across close, open and another store instance", () =>
      withStore(async ({ store, reopen }) => {
        const q = await store.open("s/k", "app");
        const origin = q.origin;
        await q.put(record(1));
        await q.put(record(2));
        await q.close();
        const again = await store.open("s/k", "app");
        expect(again.origin).toBe(origin);
        await again.close();
        const other = await reopen();
        const q2 = await other.open("s/k", "app");
        expect(q2.origin).toBe(origin);
        expect(await q2.load()).toEqual({ records: [record(1), record(2)], nextSeq: 3 });
        await q2.close();
        await other.close?.();
      }));

    it("stores a record of the largest seq, 2^52, and keeps it counted after it is removed", () =>
      withStore(async ({ store, reopen }) => {
        const q = await store.open("s/k", "app");
        await q.put(record(2 ** 52));
        expect(await q.load()).toEqual({ records: [record(2 ** 52)], nextSeq: 2 ** 52 + 1 });
        await q.delete([2 ** 52]);
        await q.close();
        const other = await reopen();
        const q2 = await other.open("s/k", "app");
        expect(await q2.load()).toEqual({ records: [], nextSeq: 2 ** 52 + 1 });
        await q2.close();
        await other.close?.();
      }));

    it("deletes what it is told (absent seqs ignored); nextSeq never goes back", () =>
      withStore(async ({ store, reopen }) => {
        const q = await store.open("s/k", "app");
        for (const seq of [1, 2, 3, 4]) await q.put(record(seq));
        await q.delete([2, 4, 17]);
        expect(await q.load()).toEqual({ records: [record(1), record(3)], nextSeq: 5 });
        await q.delete([1, 3]);
        expect(await q.load()).toEqual({ records: [], nextSeq: 5 });
        await q.close();
        const other = await reopen();
        const q2 = await other.open("s/k", "app");
        expect((await q2.load()).nextSeq).toBe(5);
        await q2.put(record(5));
        await q2.clear();
        await q2.close();
        const q3 = await other.open("s/k", "app");
        expect(await q3.load()).toEqual({ records: [], nextSeq: 6 });
        await q3.close();
        await other.close?.();
      }));

    it("applies one record's writes in the order they were called, also when not awaited, also past close", () =>
      withStore(async ({ store, reopen }) => {
        // The engine deletes a discarded update's record without waiting for a put that another
        // tab's transaction holds up; before, FilePendingStore's delete found no file yet and
        // the put then stored the record again (a discarded update came back after a reopen).
        const q = await store.open("s/k", "app");
        const writes = [q.put(record(1)), q.delete([1]), q.put(record(2)), q.put(record(3))];
        writes.push(q.delete([3]));
        await Promise.all(writes);
        expect((await q.load()).records).toEqual([record(2)]);
        const late = [q.put(record(4)), q.delete([4, 2])];
        await q.close();
        await Promise.allSettled(late);
        const other = await reopen();
        const q2 = await other.open("s/k", "app");
        const { records } = await q2.load();
        // Each write called before close() took effect, or failed as a whole: never a put after
        // the delete that followed it.
        expect(records.filter((r) => r.seq === 4)).toEqual([]);
        await q2.close();
        await other.close?.();
      }));

    it("orders a put after a delete called before it, and a clear between the writes around it", () =>
      withStore(async ({ store }) => {
        const q = await store.open("s/k", "app");
        await q.put(record(1, { v: "a" }));
        await Promise.all([q.delete([1]), q.put(record(1, { v: "b" }))]);
        expect((await q.load()).records).toEqual([record(1, { v: "b" })]);
        // A put still being written when clear() is called is cleared; one called after is kept.
        await Promise.all([q.put(record(5)), q.clear(), q.put(record(6))]);
        expect((await q.load()).records).toEqual([record(6)]);
        await q.close();
      }));

    it("never lets nextSeq go back under overlapping deletes", () =>
      withStore(async ({ store, reopen }) => {
        const q = await store.open("s/k", "app");
        const writes: Array<Promise<void>> = [];
        for (let seq = 1; seq <= 60; seq++) {
          writes.push(q.put(record(seq)));
          if (seq % 3 === 0) writes.push(q.delete([seq - 2, seq - 1, seq]));
        }
        await Promise.all(writes);
        expect(await q.load()).toEqual({ records: [], nextSeq: 61 });
        await q.close();
        const other = await reopen();
        const q2 = await other.open("s/k", "app");
        expect((await q2.load()).nextSeq).toBe(61);
        await q2.close();
        await other.close?.();
      }));

    it("replaces a record put again under the same seq", () =>
      withStore(async ({ store }) => {
        const q = await store.open("k", "app");
        await q.put(record(1, { v: "a" }));
        await q.put(record(1, { v: "b" }));
        expect((await q.load()).records).toEqual([record(1, { v: "b" })]);
        await q.close();
      }));

    it("keeps keys and owners apart, each with its own origin", () =>
      withStore(async ({ store }) => {
        const ids = [
          ["a", "one"],
          ["a.b", "one"],
          ["a/b", "one"],
          ["a", "two"],
        ] as const;
        const queues = [];
        for (const [i, [key, owner]] of ids.entries()) {
          const q = await store.open(key, owner);
          await q.put(record(1, { i }));
          queues.push(q);
        }
        expect(new Set(queues.map((q) => q.origin)).size).toBe(ids.length);
        for (const [i, q] of queues.entries()) {
          expect((await q.load()).records).toEqual([record(1, { i })]);
          await q.close();
        }
      }));

    it("lets one holder at a time open a (key, owner): QUEUE_LOCKED, also from another instance", () =>
      withStore(async ({ store, reopen }) => {
        const q = await store.open("k", "app");
        expect(isStateSyncError(await rejection(store.open("k", "app")), "QUEUE_LOCKED")).toBe(
          true,
        );
        const other = await reopen();
        expect(isStateSyncError(await rejection(other.open("k", "app")), "QUEUE_LOCKED")).toBe(
          true,
        );
        const otherOwner = await other.open("k", "app-2");
        await otherOwner.close();
        await q.close();
        await q.close(); // idempotent
        const q2 = await other.open("k", "app");
        await q2.close();
        await other.close?.();
      }));

    it("takes over the lock of a holder that died, with its records", () =>
      withStore(async ({ store, crash }) => {
        const q = await store.open("k", "app");
        await q.put(record(1));
        await q.put(record(2));
        const after = await crash();
        const q2 = await after.open("k", "app");
        expect(q2.origin).toBe(q.origin);
        expect(await q2.load()).toEqual({ records: [record(1), record(2)], nextSeq: 3 });
        await q2.close();
        await after.close?.();
      }));

    it("rejects calls on a closed queue with CLOSED", () =>
      withStore(async ({ store }) => {
        const q = await store.open("k", "app");
        await q.close();
        expect(isStateSyncError(await rejection(q.load()), "CLOSED")).toBe(true);
        expect(isStateSyncError(await rejection(q.put(record(1))), "CLOSED")).toBe(true);
      }));

    it("refuses a bad owner or record with VALIDATION", () =>
      withStore(async ({ store }) => {
        for (const owner of ["", "a b", "a/b", "x".repeat(65), "é"]) {
          expect(isStateSyncError(await rejection(store.open("k", owner)), "VALIDATION")).toBe(
            true,
          );
        }
        const q = await store.open("k", "app");
        const bad = { ...record(1), seq: 0 };
        expect(isStateSyncError(await rejection(q.put(bad)), "VALIDATION")).toBe(true);
        // Arguments no entry could carry, 256 and 100,000 levels deep: refused before anything
        // recursive (the store's JSON.stringify, a structured clone) touches them.
        for (const levels of [MAX_NESTING_DEPTH, 100_000]) {
          const deep = record(2, nested(levels), "command");
          expect(isStateSyncError(await rejection(q.put(deep)), "VALIDATION")).toBe(true);
        }
        await q.put(record(3, nested(MAX_NESTING_DEPTH - 1), "command"));
        expect((await q.load()).records.map((r) => r.seq)).toEqual([3]);
        await q.delete([3]);
        expect((await q.load()).records).toEqual([]);
        await q.close();
      }));

    it("stores 2,000 records put concurrently and loads them in order", () =>
      withStore(async ({ store }) => {
        const q = await store.open("k", "app");
        const seqs = Array.from({ length: 2_000 }, (_, i) => i + 1);
        await Promise.all(seqs.map((seq) => q.put(record(seq))));
        await q.delete(seqs.filter((s) => s % 2 === 0));
        const { records, nextSeq } = await q.load();
        expect(records.map((r) => r.seq)).toEqual(seqs.filter((s) => s % 2 === 1));
        expect(nextSeq).toBe(2_001);
        await q.close();
      }));

    damagedRecordCases(withStore);
    ownersCases(withStore);
    pendingArgumentCases(withStore, (seq, args) => record(seq, args));
  });
}
