import { describe, expect, it } from "vitest";
import { MAX_STATE_DEPTH } from "../entry-limits.js";
import { isStateSyncError } from "../errors.js";
import type { SnapshotRecord, SnapshotStore } from "../snapshot-store.js";
import { snapshotArgumentCases } from "./store-arguments.js";

/** What a {@link runSnapshotStoreConformance} factory returns for one test. */
export interface SnapshotStoreHarness {
  store: SnapshotStore;
  /** Damages the stored record under `key` (truncate or flip bits) so `load` must reject it. */
  corrupt(key: string): Promise<void>;
  teardown?(): Promise<void>;
}

function record(revision: number, state: unknown, logIdentity = "log-1"): SnapshotRecord {
  return {
    format: 1,
    revision,
    state,
    logIdentity,
    messageId: `m-${revision}`,
    model: "counter",
    modelVersion: 1,
    savedAt: 1_700_000_000_000 + revision,
  };
}

/** Arrays `levels` deep (`[[[]]]` is 3), built without recursion. */
function nested(levels: number): unknown[] {
  let v: unknown[] = [];
  for (let i = 1; i < levels; i++) v = [v];
  return v;
}

/**
 * The conformance suite every {@link SnapshotStore} passes (automerge-repo style). Call it from a
 * vitest test file with a factory that returns a fresh, empty store for each test.
 */
export function runSnapshotStoreConformance(
  name: string,
  factory: () => Promise<SnapshotStoreHarness>,
): void {
  describe(`SnapshotStore conformance: ${name}`, () => {
    async function withStore(fn: (h: SnapshotStoreHarness) => Promise<void>): Promise<void> {
      const h = await factory();
      try {
        await fn(h);
      } finally {
        await h.store.close?.();
        await h.teardown?.();
      }
    }

    it("loads undefined for a key never saved", () =>
      withStore(async ({ store }) => {
        expect(await store.load("stream/none")).toBeUndefined();
      }));

    it("round-trips state and revision together", () =>
      withStore(async ({ store }) => {
        const state = { a: [1, 2, { b: "ü€😀" }], n: null, t: true, f: 1.5 };
        await store.save("s/k.1", record(7, state));
        const loaded = await store.load("s/k.1");
        expect(loaded).toEqual(record(7, state));
      }));

    it("keeps keys apart", () =>
      withStore(async ({ store }) => {
        await store.save("a", record(1, { v: "a" }));
        await store.save("a.b", record(2, { v: "ab" }));
        await store.save("a/b", record(3, { v: "a/b" }));
        expect((await store.load("a"))?.state).toEqual({ v: "a" });
        expect((await store.load("a.b"))?.state).toEqual({ v: "ab" });
        expect((await store.load("a/b"))?.state).toEqual({ v: "a/b" });
      }));

    it("replaces an older revision and never a newer one", () =>
      withStore(async ({ store }) => {
        await store.save("k", record(5, { v: 5 }));
        await store.save("k", record(9, { v: 9 }));
        expect((await store.load("k"))?.revision).toBe(9);
        await store.save("k", record(3, { v: 3 }));
        expect((await store.load("k"))?.revision).toBe(9);
      }));

    it("replaces a record of another log identity whatever its revision", () =>
      withStore(async ({ store }) => {
        await store.save("k", record(9, { v: 9 }, "old"));
        await store.save("k", record(2, { v: 2 }, "new"));
        const loaded = await store.load("k");
        expect(loaded?.logIdentity).toBe("new");
        expect(loaded?.revision).toBe(2);
      }));

    it("ends concurrent saves with the highest revision", () =>
      withStore(async ({ store }) => {
        await Promise.all([1, 4, 2, 8, 3].map((r) => store.save("k", record(r, { r }))));
        expect((await store.load("k"))?.revision).toBe(8);
      }));

    it("deletes, and deleting nothing is not an error", () =>
      withStore(async ({ store }) => {
        await store.save("k", record(1, {}));
        await store.delete("k");
        expect(await store.load("k")).toBeUndefined();
        await store.delete("k");
      }));

    it("round-trips a large state (about 1 MB)", () =>
      withStore(async ({ store }) => {
        const state = {
          items: Array.from({ length: 20_000 }, (_, i) => ({ i, s: "x".repeat(40) })),
        };
        await store.save("big", record(1, state));
        expect((await store.load("big"))?.state).toEqual(state);
      }));

    it("refuses a state nested deeper than MAX_STATE_DEPTH with VALIDATION, keeping what it had", () =>
      withStore(async ({ store }) => {
        // 256 and 100,000 levels: refused before anything recursive (JSON.stringify, a
        // structured clone) touches the state; a replica would refuse it at load anyway.
        await store.save("k", record(1, { v: 1 }));
        for (const levels of [MAX_STATE_DEPTH + 1, 100_000]) {
          let error: unknown;
          try {
            await store.save("k", record(2, nested(levels)));
          } catch (e) {
            error = e;
          }
          expect(isStateSyncError(error, "VALIDATION")).toBe(true);
        }
        expect(await store.load("k")).toEqual(record(1, { v: 1 }));
        await store.save("k", record(3, nested(MAX_STATE_DEPTH)));
        expect((await store.load("k"))?.revision).toBe(3);
      }));

    it("rejects a damaged record with CORRUPT_SNAPSHOT instead of returning garbage", () =>
      withStore(async ({ store, corrupt }) => {
        await store.save("k", record(4, { v: "some state that is long enough to damage" }));
        await corrupt("k");
        let error: unknown;
        try {
          await store.load("k");
        } catch (e) {
          error = e;
        }
        expect(isStateSyncError(error, "CORRUPT_SNAPSHOT")).toBe(true);
        await store.delete("k");
        expect(await store.load("k")).toBeUndefined();
      }));

    snapshotArgumentCases(withStore, record);
  });
}
