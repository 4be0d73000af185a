// The options of the browser package's public constructors and factories are checked strictly,
// before anything is opened, in Node's words where Node has the same option (run in Node: each
// refusal comes before IndexedDB, Web Locks or a BroadcastChannel is touched). Before, a new
// user's trial: `offlineQueue({ owner: "" })` opened queues `-0`, `-1`, ...,
// `offlineQueue({ ownr: "x" })` used the default owner in silence, and
// `new IndexedDbSnapshotStore(7)` was taken as no options.
import {
  IndexedDbPendingStore,
  IndexedDbSnapshotStore,
  MemoryPendingStore,
  StateSyncError,
  TabLog,
} from "@statesync/browser";
import { offlineQueue } from "@statesync/browser/offline";
import { getFreePort, openSynchronizer as openInNode } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { counter } from "../../node/test/support/models.js";
import { zodIssues } from "../../node/test/support/option-refusals.js";

/** The error `make` throws (undefined when it throws none). */
function thrown(make: () => unknown): unknown {
  try {
    make();
    return undefined;
  } catch (error) {
    return error;
  }
}

/** `[path: message]` of a `VALIDATION` refusal by `caller`. */
function refusal(error: unknown, caller: string): string[] {
  expect(error, caller).toBeInstanceOf(StateSyncError);
  expect((error as StateSyncError).code).toBe("VALIDATION");
  expect((error as Error).message).toMatch(new RegExp(`^invalid ${caller} options: `));
  return zodIssues(error);
}

describe("offlineQueue", () => {
  it("refuses an owner Node refuses, in Node's words", async () => {
    const port = await getFreePort();
    for (const owner of ["", "a b", "a/b", "é", 7]) {
      const browser = refusal(
        thrown(() => offlineQueue({ owner } as never)),
        "offlineQueue",
      );
      // Node's `pending: { owner }` (openSynchronizer refuses it before it connects).
      const node = await openInNode({
        servers: `nats://127.0.0.1:${port}`,
        stream: "OWNERS",
        model: counter,
        snapshots: false,
        pending: { owner } as never,
      }).then(
        async (sync) => {
          await sync.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(browser, JSON.stringify(owner)).toEqual(
        refusal(node, "openSynchronizer").map((issue) => issue.replace(/^pending\./, "")),
      );
    }
  });

  it("refuses an unknown key, naming it, and a store that is no PendingStore", () => {
    expect(thrown(() => offlineQueue({ ownr: "x" } as never))).toMatchObject({
      code: "VALIDATION",
      message: 'invalid offlineQueue options: ✖ Unrecognized key: "ownr"',
    });
    for (const store of [{}, 7, { open: "x" }]) {
      expect(
        refusal(
          thrown(() => offlineQueue({ store } as never)),
          "offlineQueue",
        ),
      ).toEqual(["store: store must be a PendingStore"]);
    }
    // A prefix leaves room for "-<n>" (queues of 64 characters at most).
    expect(
      refusal(
        thrown(() => offlineQueue({ owner: "o".repeat(62) })),
        "offlineQueue",
      ),
    ).toEqual([
      "owner: an owner prefix is at most 61 characters: each tab's queue is <owner>-<n>, an owner of at most 64",
    ]);
    for (const options of [null, 7, "todos"]) {
      expect(thrown(() => offlineQueue(options as never))).toMatchObject({ code: "VALIDATION" });
    }
  });

  it("takes what it documents", () => {
    expect(offlineQueue().owner).toBe("browser");
    expect(offlineQueue({ owner: "o".repeat(61) }).owner).toHaveLength(61);
    expect(offlineQueue({ owner: "todos", store: new MemoryPendingStore() }).owner).toBe("todos");
  });
});

describe("constructors", () => {
  const fn = () => undefined;
  const cases: Array<[string, string, () => unknown, string[]]> = [
    [
      "IndexedDbSnapshotStore",
      "7",
      () => new IndexedDbSnapshotStore(7 as never),
      [": options must be { databaseName?, onWarning?, blockedTimeoutMs?, reopen? }, or left out"],
    ],
    [
      "IndexedDbSnapshotStore",
      "null",
      () => new IndexedDbSnapshotStore(null as never),
      [": options must be { databaseName?, onWarning?, blockedTimeoutMs?, reopen? }, or left out"],
    ],
    [
      "IndexedDbSnapshotStore",
      "a typo",
      () => new IndexedDbSnapshotStore({ databseName: "x" } as never),
      [': Unrecognized key: "databseName"'],
    ],
    [
      "IndexedDbSnapshotStore",
      'onWarning "log"',
      () => new IndexedDbSnapshotStore({ onWarning: "log" } as never),
      ["onWarning: expected a function"],
    ],
    [
      "IndexedDbSnapshotStore",
      "a typo in reopen",
      () => new IndexedDbSnapshotStore({ reopen: { attempt: 3 } } as never),
      ['reopen: Unrecognized key: "attempt"'],
    ],
    [
      "IndexedDbSnapshotStore",
      "reopen.baseMs past capMs",
      () => new IndexedDbSnapshotStore({ reopen: { baseMs: 5_000 } }),
      ["reopen.capMs: reopen.capMs must be at least reopen.baseMs (default 50)"],
    ],
    [
      "IndexedDbSnapshotStore",
      'databaseName ""',
      () => new IndexedDbSnapshotStore({ databaseName: "" }),
      ["databaseName: databaseName must be a non-empty string"],
    ],
    [
      "IndexedDbPendingStore",
      "7",
      () => new IndexedDbPendingStore(7 as never),
      [": options must be { databaseName?, onWarning? }, or left out"],
    ],
    [
      "IndexedDbPendingStore",
      "a typo",
      () => new IndexedDbPendingStore({ databseName: "x" } as never),
      [': Unrecognized key: "databseName"'],
    ],
    [
      "IndexedDbPendingStore",
      "databaseName 7",
      () => new IndexedDbPendingStore({ databaseName: 7 } as never),
      ["databaseName: Invalid input: expected string, received number"],
    ],
    [
      "IndexedDbPendingStore",
      "onWarning true",
      () => new IndexedDbPendingStore({ onWarning: true } as never),
      ["onWarning: expected a function"],
    ],
    ["TabLog", "7", () => new TabLog(7 as never), [": options must be TabLogOptions, or left out"]],
    [
      "TabLog",
      "a tab id over 64 characters",
      () =>
        new TabLog({
          name: "t",
          contiguous: true,
          leaderLog: fn,
          locks: { request: fn },
          tokens: { getItem: fn, setItem: fn, removeItem: fn },
          tabId: "t".repeat(65), // the other tabs' message check drops such an id
        } as never),
      ["tabId: Too big: expected string to have <=64 characters"],
    ],
    [
      "TabLog",
      "locks that are no LockManager, a typo",
      () =>
        new TabLog({
          name: "t",
          contiguous: true,
          leaderLog: fn,
          locks: {},
          tokens: { getItem: fn, setItem: fn, removeItem: fn },
          leader: fn,
        } as never),
      ["locks: locks (a LockManager) must have request", ': Unrecognized key: "leader"'],
    ],
  ];
  it.each(cases)("%s: %s", (caller, _label, make, issues) => {
    expect(refusal(thrown(make), caller)).toEqual(issues);
  });

  it("take what they document (nothing is opened until used)", async () => {
    const stores = [
      new IndexedDbSnapshotStore(),
      new IndexedDbSnapshotStore({
        databaseName: "d",
        onWarning: () => undefined,
        blockedTimeoutMs: 0,
        reopen: { attempts: 1, baseMs: 0, capMs: 0 },
      }),
    ];
    for (const store of stores) await store.close();
    expect(new IndexedDbPendingStore({ databaseName: "p" }).databaseName).toBe("p");
    expect(new IndexedDbPendingStore().databaseName).toBe("statesync-pending");
  });
});
