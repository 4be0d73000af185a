// Tabs' status while the lead is handed over (docs/offline.md, "Tabs"): the leading tab closes,
// another takes the lead and makes its own connection. Before, every tab said `offline` from the
// leader's `bye` until the new leader's connection was made, though nothing had failed; a
// handover now keeps the status, and only its end decides (the new leader online, or its
// connection refused: `offline`, as ever). Run in Node with the fake Web Locks and localStorage
// (test/support/fake-tabs.ts); each lead's connection is made when the test says so.
import {
  createSynchronizer,
  MemoryLog,
  StateSyncError,
  TabLog,
  type LockManagerLike,
  type RevisionedLog,
  type StateSynchronizer,
  type SyncStatus,
} from "@statesync/browser";
import { expect, it } from "vitest";
import { closeAfterEach, FakeLocks, FakeStorage } from "./support/fake-tabs.js";
import { notes } from "./support/models.js";

type Sync = StateSynchronizer<(typeof notes)["initial"], (typeof notes)["commands"]>;

let names = 0;
const closing = closeAfterEach();

/** One origin: the log on the server, and the locks and storage its tabs share. */
function origin() {
  const server = new MemoryLog();
  const shared = { locks: new FakeLocks(), tokens: new FakeStorage() };
  const name = `handover-test-${process.pid}-${++names}`;
  /**
   * A tab. Its first lead connects at once when `connected`, else when `connect()` is called
   * (its log says `offline` till then and its calls wait, as a JetStreamLog's while it connects).
   */
  async function tab(id: string, opts: { connected?: boolean; locks?: LockManagerLike } = {}) {
    let connect: () => void = () => undefined;
    const made = new Promise<void>((resolve) => (connect = resolve));
    if (opts.connected) connect();
    const log = new TabLog({
      name,
      contiguous: true,
      ...shared,
      ...(opts.locks ? { locks: opts.locks } : {}),
      tabId: id,
      leaderLog: () => ({ log: connecting(server.handle(), made), close: async () => undefined }),
    });
    const seen: SyncStatus[] = [];
    const sync: Sync = await createSynchronizer({
      log,
      ownsLog: true,
      model: notes,
      clientId: id,
      compaction: false,
      waitFor: "restored",
      onStatus: (s) => seen.push(s),
    });
    closing.push(() => sync.close());
    return { log, sync, seen, connect };
  }
  return { tab, server };
}

type StatusListener = Parameters<RevisionedLog["watchStatus"]>[0];

/** `log` not connected until `made` resolves: `offline`, its calls waiting; then `online`. */
function connecting(log: MemoryLog, made: Promise<void>): RevisionedLog {
  let connected = false;
  const listeners = new Set<StatusListener>();
  void made.then(() => {
    connected = true;
    for (const l of listeners) l("online");
  });
  const waiting = new Set(["info", "entryAt", "appendConditional", "appendUnconditional"]);
  return new Proxy(log, {
    get(target, prop) {
      if (prop === "status") return connected ? target.status : "offline";
      if (prop === "watchStatus") {
        return (listener: StatusListener) => {
          listeners.add(listener);
          const stop = target.watchStatus(listener);
          return () => (listeners.delete(listener), stop());
        };
      }
      if (prop === "read") {
        return async function* (from: number, to: number) {
          await made;
          yield* target.read(from, to);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== "function") return value;
      if (!waiting.has(String(prop))) return value.bind(target);
      return async (...args: unknown[]) => {
        await made;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Three live tabs, `a` leading; the statuses the others reported so far forgotten. */
async function threeTabs() {
  const { tab, server } = origin();
  const a = await tab("a", { connected: true });
  await until(() => a.log.leading);
  const b = await tab("b");
  const c = await tab("c");
  await until(() => [a, b, c].every((t) => t.sync.status === "live"));
  const { revision } = await c.sync.update("add", { text: "before" });
  await b.sync.waitFor(revision);
  b.seen.length = 0;
  c.seen.length = 0;
  return { a, b, c, server };
}

it("no tab says offline while the leading tab closes and the next one connects", async () => {
  const { a, b, c } = await threeTabs();
  await a.sync.close();
  await until(() => b.log.leading); // first in the lock's queue
  // The new leader's connection is being made: the lead is being handed over.
  expect([b.sync.status, c.sync.status]).toEqual(["live", "live"]);
  b.connect();
  const { revision } = await c.sync.update("add", { text: "after" }); // through b now
  await b.sync.waitFor(revision);
  expect(b.sync.state.notes).toEqual(["before", "after"]);
  // Before: ["offline", "live"] in both, from a's `bye` on.
  expect({ b: b.seen, c: c.seen }).toEqual({ b: [], c: [] });
});

it("a log that went back while the lead was handed over is found by every tab, as after a reconnection", async () => {
  // The handover keeps the status `online`; its end says `online` again, and the replicas check
  // the log. Before, no tab checked: the followers stayed live on entries the log no longer had.
  const { a, b, c, server } = await threeTabs();
  const backup = (await server.info()).latestRevision;
  const { revision } = await c.sync.update("add", { text: "lost" });
  await b.sync.waitFor(revision);
  await a.sync.close();
  await until(() => b.log.leading);
  server.rewindTo(backup); // the server came back without its last entry
  b.connect();
  await until(() => b.sync.status === "stalled" && c.sync.status === "stalled");
  expect([b.sync.stallReason?.code, c.sync.stallReason?.code]).toEqual([
    "LOG_REPLACED",
    "LOG_REPLACED",
  ]);
});

it("a handover whose new connection is refused says offline, in the new leader and its followers", async () => {
  const { a, b, c } = await threeTabs();
  await a.sync.close();
  await until(() => b.log.leading);
  expect([b.sync.status, c.sync.status]).toEqual(["live", "live"]);
  b.log.noteLeadFailure(new StateSyncError("UNAVAILABLE", "WebSocket refused")); // as openTabLog
  await until(() => b.sync.status === "offline" && c.sync.status === "offline");
  b.connect();
  await until(() => b.sync.status === "live" && c.sync.status === "live");
  expect({ b: b.seen, c: c.seen }).toEqual({ b: ["offline", "live"], c: ["offline", "live"] });
});

it("a handover no tab ends (none can take the lead) says offline once it has lasted", async () => {
  const { tab } = origin();
  const a = await tab("a", { connected: true });
  await until(() => a.log.leading);
  // b never gets the lock, and a lockless tab takes no lead that was given up (no token).
  const never: LockManagerLike = { request: () => new Promise(() => undefined) };
  const b = await tab("b", { locks: never });
  await until(() => b.sync.status === "live");
  await a.sync.close();
  await until(() => b.sync.status === "offline");
  expect(b.log.leading).toBe(false);
});
