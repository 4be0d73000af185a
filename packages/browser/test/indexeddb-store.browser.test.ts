import {
  IndexedDbSnapshotStore,
  isStateSyncError,
  type SnapshotRecord,
  type SnapshotStoreWarning,
} from "@statesync/browser";
import { openDB } from "idb";
import { afterEach, describe, expect, it, vi } from "vitest";
import { dropDatabase, rawGet, rawPut, uniqueDatabase } from "./idb-helpers.js";

function record(revision: number, state: unknown = { revision }): SnapshotRecord {
  return {
    format: 1,
    revision,
    state,
    logIdentity: "log-1",
    messageId: `m-${revision}`,
    model: "board",
    modelVersion: 1,
    savedAt: 1_700_000_000_000,
  };
}

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const fn of cleanup.splice(0).reverse()) await fn();
});

/** A store on a fresh database, with the warnings it gave; closed and dropped after the test. */
function freshStore(options: { blockedTimeoutMs?: number; databaseName?: string } = {}) {
  const databaseName = options.databaseName ?? uniqueDatabase();
  const warnings: SnapshotStoreWarning[] = [];
  const store = new IndexedDbSnapshotStore({
    databaseName,
    blockedTimeoutMs: options.blockedTimeoutMs,
    onWarning: (w) => warnings.push(w),
  });
  cleanup.push(async () => {
    await store.close();
    await dropDatabase(databaseName);
  });
  return { store, warnings, databaseName };
}

async function loadError(store: IndexedDbSnapshotStore, key: string): Promise<unknown> {
  try {
    await store.load(key);
  } catch (e) {
    return e;
  }
  throw new Error("expected load to reject");
}

describe("IndexedDbSnapshotStore: damaged records", () => {
  it.each([
    ["a value that is not an object", () => "just a string"],
    ["a value of an unknown format", (v: any) => ({ ...v, v: 2 })],
    [
      "a body whose checksum does not match",
      (v: any) => ({ ...v, body: v.body.replace("7", "8") }),
    ],
    [
      "a body with a valid checksum but an invalid record",
      async (v: any) => {
        const { sha256 } = await import("@noble/hashes/sha2.js");
        const { bytesToHex } = await import("@noble/hashes/utils.js");
        const body = JSON.stringify({ ...JSON.parse(v.body), format: 9 });
        return { ...v, body, sha256: bytesToHex(sha256(new TextEncoder().encode(body))) };
      },
    ],
    ["a header that disagrees with the record", (v: any) => ({ ...v, revision: 99 })],
  ])("rejects %s with CORRUPT_SNAPSHOT and lets a save replace it", async (_, damage) => {
    const { store, warnings, databaseName } = freshStore();
    await store.save("k", record(7));
    await rawPut(databaseName, "k", await damage(await rawGet(databaseName, "k")));
    const error = await loadError(store, "k");
    expect(isStateSyncError(error, "CORRUPT_SNAPSHOT")).toBe(true);
    await store.save("k", record(3));
    expect((await store.load("k"))?.revision).toBe(3);
    expect(warnings).toEqual([]);
  });
});

describe("IndexedDbSnapshotStore: other connections", () => {
  it("closes for another connection's upgrade (versionchange) and reopens", async () => {
    const { store, warnings, databaseName } = freshStore();
    await store.save("k", record(1));
    const peek = await openDB(databaseName);
    const current = peek.version;
    peek.close();
    // Without the store closing on versionchange, this upgrade would stay blocked.
    const other = await openDB(databaseName, current + 1, {
      upgrade: (db) => void db.createObjectStore("someone-elses"),
    });
    other.close();
    expect((await store.load("k"))?.revision).toBe(1);
    await store.save("k", record(2));
    expect((await store.load("k"))?.revision).toBe(2);
    expect(warnings).toEqual([]);
  });

  it("lets another connection delete the database and starts afresh", async () => {
    const { store, warnings, databaseName } = freshStore();
    await store.save("k", record(1));
    await dropDatabase(databaseName);
    expect(await store.load("k")).toBeUndefined();
    await store.save("k", record(2));
    expect((await store.load("k"))?.revision).toBe(2);
    expect(warnings).toEqual([]);
  });

  it("falls back to memory with one warning when a connection elsewhere blocks the upgrade", async () => {
    const databaseName = uniqueDatabase("blocked");
    // A connection that ignores versionchange, on a database without the snapshot store.
    const stubborn = await openDB(databaseName, 1);
    try {
      const { store, warnings } = freshStore({ databaseName, blockedTimeoutMs: 200 });
      expect(await store.load("k")).toBeUndefined();
      await store.save("k", record(5));
      await store.save("k", record(4));
      expect((await store.load("k"))?.revision).toBe(5);
      expect(warnings.map((w) => w.reason)).toEqual(["blocked"]);
      expect(store.fallbackReason).toBe("blocked");
    } finally {
      stubborn.close();
    }
  });

  it("shares records between two stores (two tabs) and keeps the highest revision", async () => {
    const a = freshStore();
    const b = new IndexedDbSnapshotStore({ databaseName: a.databaseName });
    cleanup.push(() => b.close());
    await Promise.all([
      ...[1, 6, 3].map((r) => a.store.save("k", record(r))),
      ...[5, 2, 4].map((r) => b.save("k", record(r))),
    ]);
    expect((await a.store.load("k"))?.revision).toBe(6);
    expect((await b.load("k"))?.revision).toBe(6);
  });
});

describe("IndexedDbSnapshotStore: falling back to memory", () => {
  it("keeps a save refused for quota in memory, with one warning", async () => {
    // Chromium caches an origin's quota once IndexedDB was used, so shrinking it through
    // DevTools (Storage.overrideQuotaForOrigin) is not reliable here; the e2e suite does that in
    // a fresh browser context. Here the write fails as Safari's private mode made it fail.
    const { store, warnings } = freshStore();
    await store.save("k", record(1));
    vi.spyOn(IDBObjectStore.prototype, "put").mockImplementation(() => {
      throw new DOMException("The quota has been exceeded.", "QuotaExceededError");
    });
    await store.save("k", record(2, { big: "x".repeat(1000) }));
    await store.save("k", record(3));
    expect((await store.load("k"))?.revision).toBe(3);
    expect(warnings.map((w) => w.reason)).toEqual(["quota"]);
    expect(warnings[0]?.message).toMatch(/QuotaExceededError/);
  });

  it("works in memory where opening IndexedDB is refused (private browsing)", async () => {
    vi.spyOn(IDBFactory.prototype, "open").mockImplementation(() => {
      throw new DOMException("The user denied permission to access the database.", "SecurityError");
    });
    const { store, warnings } = freshStore();
    expect(await store.load("k")).toBeUndefined();
    await store.save("k", record(9));
    expect((await store.load("k"))?.revision).toBe(9);
    await store.delete("k");
    expect(await store.load("k")).toBeUndefined();
    expect(warnings.map((w) => w.reason)).toEqual(["unavailable"]);
    vi.restoreAllMocks();
  });

  it("rejects calls after close with CLOSED", async () => {
    const { store } = freshStore();
    await store.close();
    expect(isStateSyncError(await loadError(store, "k"), "CLOSED")).toBe(true);
  });
});

describe("IndexedDbSnapshotStore: options", () => {
  it("refuses a blockedTimeoutMs above setTimeout's bound (2^31 - 1), which would fire at once", () => {
    for (const blockedTimeoutMs of [2 ** 31, 1e12, Infinity, Number.NaN, -1]) {
      let error: unknown;
      try {
        new IndexedDbSnapshotStore({ blockedTimeoutMs });
      } catch (e) {
        error = e;
      }
      expect(isStateSyncError(error, "VALIDATION"), String(blockedTimeoutMs)).toBe(true);
    }
    expect(() => new IndexedDbSnapshotStore({ blockedTimeoutMs: 2 ** 31 - 1 })).not.toThrow();
  });
});
