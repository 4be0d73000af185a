// The optional members of `RevisionedLog` through the tabs' log when the leading tab's log lacks
// them or answers oddly (tab-log-optional-node.test.ts: against a real JetStreamLog). A member
// absent on the leader's log answers as absent does: `otherStateAt` false, no warnings,
// configuration notices unavailable (the replica polls), no identity prefix.
import {
  MemoryLog,
  TabLog,
  isStateSyncError,
  type LogConfigWatcher,
  type RevisionedLog,
  type StateSyncError,
} from "@statesync/browser";
import { afterEach, expect, it } from "vitest";
import { runOp } from "../src/tabs/run-op.js";
import { FakeLocks, FakeStorage } from "./support/fake-tabs.js";

const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});

async function until(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 20));
  }
}

let names = 0;

/** Two tabs whose leading tab runs on `leaderLog()`: `lead` leads, `follower` follows. */
async function twoTabs(leaderLog: () => RevisionedLog) {
  const support = { locks: new FakeLocks(), tokens: new FakeStorage() };
  const name = `optional-memory-${process.pid}-${++names}`;
  const open = (tabId: string) => {
    const log = new TabLog({
      name,
      contiguous: true,
      ...support,
      tabId,
      leaderLog: () => ({ log: leaderLog(), close: async () => undefined }),
    });
    closing.push(() => log.close());
    return log;
  };
  const lead = open("lead");
  await until(() => lead.leading && lead.status === "online");
  const follower = open("follower");
  await until(() => follower.followsAnother && follower.status === "online");
  return { lead, follower };
}

/** `log` without the members named. */
function without(log: RevisionedLog, ...hidden: Array<keyof RevisionedLog>): RevisionedLog {
  return new Proxy(log, {
    get(target, prop, receiver) {
      if ((hidden as PropertyKey[]).includes(prop)) return undefined;
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** A watcher that records what it hears. */
function recorder(): { watcher: LogConfigWatcher; seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    watcher: {
      onChange: () => seen.push("change"),
      onUnavailable: (e) => seen.push(`unavailable ${(e as StateSyncError).code}`),
    },
  };
}

it("a leader's log without otherStateAt, watchWarnings or identityPrefix: answered as absent", async () => {
  const server = new MemoryLog();
  const { lead, follower } = await twoTabs(() => server.handle());
  const { revision } = await follower.appendUnconditional(new Uint8Array([1]), "m1");
  expect(await follower.otherStateAt(revision)).toBe(false);
  expect(await follower.otherStateAt(revision + 1)).toBe(false);
  expect(await lead.otherStateAt(revision)).toBe(false);
  const warnings: StateSyncError[] = [];
  follower.watchWarnings((w) => warnings.push(w));
  await follower.info(); // a round trip through the leader, beats heard meanwhile
  expect(warnings).toEqual([]);
  expect("identityPrefix" in follower).toBe(false);
});

it("a leader's log without watchConfig: every tab's watcher hears onUnavailable once, and polls", async () => {
  const server = new MemoryLog();
  const { lead, follower } = await twoTabs(() => without(server.handle(), "watchConfig"));
  const led = recorder();
  const followed = recorder();
  lead.watchConfig(led.watcher);
  follower.watchConfig(followed.watcher);
  await until(() => followed.seen.length > 0);
  expect(led.seen).toEqual(["unavailable UNAVAILABLE"]);
  expect(followed.seen).toEqual(["unavailable UNAVAILABLE"]);
  await follower.info();
  expect(followed.seen).toEqual(["unavailable UNAVAILABLE"]);
});

it("a leader's log whose notices are denied: the follower's watcher hears onUnavailable", async () => {
  const server = new MemoryLog();
  server.denyConfigWatch();
  const { follower } = await twoTabs(() => server.handle());
  const followed = recorder();
  follower.watchConfig(followed.watcher);
  await until(() => followed.seen.length > 0);
  expect(followed.seen).toEqual(["unavailable UNAVAILABLE"]);
});

it("a leader's log's configuration notice reaches the follower's watcher as onChange", async () => {
  const server = new MemoryLog();
  const { follower } = await twoTabs(() => server.handle());
  const followed = recorder();
  follower.watchConfig(followed.watcher);
  await follower.info();
  server.setConfigProblem("an operator set max_msgs");
  await until(() => followed.seen.length > 0);
  expect(followed.seen).toEqual(["change"]);
});

it("otherStateAt: a malformed request or answer is VALIDATION", async () => {
  const server = new MemoryLog();
  const log = server.handle();
  for (const args of [[], ["3"], [0], [1.5], [1, 2]]) {
    const e = await runOp(log, "otherStateAt", args, () => true).catch((x: unknown) => x);
    expect(isStateSyncError(e, "VALIDATION")).toBe(true);
  }
  const odd = new Proxy(server.handle(), {
    get(target, prop, receiver) {
      if (prop === "otherStateAt") return async () => "yes";
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const { follower } = await twoTabs(() => odd);
  const e = await follower.otherStateAt(1).catch((x: unknown) => x);
  expect(isStateSyncError(e, "VALIDATION")).toBe(true);
});
