// TabLog.follow keeps `RevisionedLog.follow`'s promise (every entry from `fromRevision` on) when
// the follow starts after the tab heard of the entries it asks for: the engine reads up to the
// log's latest revision, then follows from the revision after it, and the leading tab's own
// follower may have delivered the next entry meanwhile, or started past it. A trial: after a
// nats-server restart, a page stayed `live` at an old revision for good (its replica's follow
// began right after the leading tab's follower delivered the entry it needed).
import { MemoryLog, TabLog, type LogEntry, type RevisionedLog } from "@statesync/browser";
import { afterEach, expect, it } from "vitest";
import { FakeLocks, FakeStorage } from "./support/fake-tabs.js";

let names = 0;
const closing: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close().catch(() => undefined);
});

const enc = new TextEncoder();

/**
 * `log` with the revisions its followers were started at, the entries they delivered and the
 * ranges read from it; its `info()` answers once `infoGate` resolves.
 */
function watched(
  log: RevisionedLog,
  starts: number[],
  delivered: number[],
  reads: Array<[number, number]>,
  infoGate?: Promise<void> | (() => Promise<void>),
): RevisionedLog {
  return new Proxy(log, {
    get(target, prop, receiver) {
      if (prop === "info" && infoGate) {
        const gate = typeof infoGate === "function" ? infoGate : () => infoGate;
        return () => gate().then(() => target.info());
      }
      if (prop === "read") {
        return (from: number, to: number) => {
          reads.push([from, to]);
          return target.read(from, to);
        };
      }
      if (prop === "follow") {
        return (from: number, handler: Parameters<RevisionedLog["follow"]>[1]) => {
          starts.push(from);
          return target.follow(from, {
            ...handler,
            onEntry: (e) => {
              delivered.push(e.revision);
              handler.onEntry(e);
            },
          });
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Tabs of one origin over `server`. */
function origin(server: MemoryLog) {
  const name = `late-follow-${process.pid}-${++names}`;
  const locks = new FakeLocks();
  const tokens = new FakeStorage();
  /**
   * A tab; `starts`/`delivered`: what its own log's follower did while it led; `reads`: the
   * ranges it read from its own log.
   */
  const tab = (
    tabId: string,
    channel?: RecordingChannel,
    infoGate?: Promise<void> | (() => Promise<void>),
  ) => {
    const starts: number[] = [];
    const delivered: number[] = [];
    const reads: Array<[number, number]> = [];
    const log = new TabLog({
      name,
      contiguous: true,
      locks,
      tokens,
      tabId,
      channel: channel as unknown as BroadcastChannel | undefined,
      leaderLog: () => ({
        log: watched(server.handle(), starts, delivered, reads, infoGate),
        close: async () => undefined,
      }),
    });
    closing.push(() => log.close());
    return { log, starts, delivered, reads };
  };
  return { tab, name };
}

/** A leading tab over `server` (its follower started). */
async function leadingTab(server: MemoryLog) {
  const tab = origin(server).tab("a");
  await until(() => tab.log.leading && tab.starts.length > 0);
  return tab;
}

/** A `BroadcastChannel` that records what it handed on to its tab. */
class RecordingChannel {
  private readonly inner: BroadcastChannel;
  readonly received: unknown[] = [];
  onmessage: ((e: MessageEvent) => void) | null = null;

  constructor(name: string) {
    this.inner = new BroadcastChannel(name);
    this.inner.onmessage = (e: MessageEvent) => {
      this.onmessage?.(e);
      this.received.push(e.data);
    };
  }
  postMessage(message: unknown): void {
    this.inner.postMessage(message);
  }
  close(): void {
    this.inner.close();
  }
}

let appended = 0;
async function append(server: MemoryLog, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    appended += 1;
    await server.appendUnconditional(enc.encode(`e${appended}`), `m${appended}`);
  }
}

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not reached");
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Follows `log` from `from`; the revisions it delivers. */
function follow(log: TabLog, from: number): number[] {
  const got: number[] = [];
  const follower = log.follow(from, { onEntry: (e: LogEntry) => got.push(e.revision) });
  closing.push(() => follower.stop());
  return got;
}

it("a follow that starts after the leading tab's follower delivered its first entry still gets it", async () => {
  const server = new MemoryLog();
  await append(server, 2);
  const { log, starts, delivered } = await leadingTab(server);
  expect(starts).toEqual([3]); // no one followed yet: from the log's latest revision + 1
  await append(server, 1);
  await until(() => delivered.includes(3)); // handed on to no one
  const got = follow(log, 3);
  await until(() => got.length > 0);
  expect(got).toEqual([3]);
  await append(server, 1);
  await until(() => got.length > 1);
  expect(got).toEqual([3, 4]);
});

it("a follow from before where the leading tab's follower started gets the entries in between", async () => {
  const server = new MemoryLog();
  await append(server, 3);
  const { log, starts } = await leadingTab(server);
  expect(starts).toEqual([4]);
  const got = follow(log, 2); // the replica read up to 1; 2 and 3 came meanwhile
  await until(() => got.length >= 2);
  expect(got).toEqual([2, 3]);
  await append(server, 1);
  await until(() => got.length > 2);
  expect(got).toEqual([2, 3, 4]);
});

it("a follow that starts while the leading tab's follower waits for the latest revision gets what came meanwhile", async () => {
  const server = new MemoryLog();
  await append(server, 2);
  let answer!: () => void;
  const infoGate = new Promise<void>((resolve) => (answer = resolve));
  const { log, starts } = origin(server).tab("a", undefined, infoGate);
  await until(() => log.leading);
  const got = follow(log, 3); // the replica read up to 2 while the leading tab asked for info()
  await append(server, 1);
  answer(); // latest: 3, so the leading tab's follower starts at 4
  await until(() => starts.length > 0);
  expect(starts).toEqual([4]);
  await until(() => got.length > 0);
  expect(got).toEqual([3]);
});

it("a follow that starts where the source stands reads nothing first and misses nothing", async () => {
  const server = new MemoryLog();
  await append(server, 2);
  const { log, reads } = await leadingTab(server);
  const before = reads.length;
  const got = follow(log, 3);
  await append(server, 2);
  await until(() => got.length >= 2);
  expect(got).toEqual([3, 4]);
  expect(reads.slice(before)).toEqual([]); // both came from the leading tab's own follower
});

it("a tab that does not lead: a follow after it heard the entry from the leading tab gets it", async () => {
  const server = new MemoryLog();
  await append(server, 2);
  const { tab, name } = origin(server);
  const a = tab("a");
  await until(() => a.log.leading && a.starts.length > 0);
  const channel = new RecordingChannel(name);
  const b = tab("b", channel);
  await until(() => b.log.status === "online");
  await append(server, 1);
  const heard = () =>
    channel.received.some((m) => (m as { entry?: LogEntry }).entry?.revision === 3);
  await until(heard); // pushed to b's followers: none yet
  const got = follow(b.log, 3);
  await until(() => got.length > 0);
  expect(got).toEqual([3]);
  expect(b.log.leading).toBe(false);
});

it("the leading tab of an empty log follows it from its first entry (it does not ask the log's latest revision again and again)", async () => {
  const server = new MemoryLog();
  // info() answers in a later task, as a server does (a MemoryLog answers in a microtask: a tab
  // asking again and again would starve the event loop, and this test could not fail).
  let infoCalls = 0;
  const slowInfo = () =>
    new Promise<void>((resolve) => {
      infoCalls += 1;
      setTimeout(resolve, 1);
    });
  const { log, starts } = origin(server).tab("a", undefined, slowInfo);
  await until(() => log.leading);
  await until(() => starts.length > 0); // before: never, while the log was empty
  expect(starts).toEqual([1]);
  expect(infoCalls).toBe(1);
  const got = follow(log, 1);
  await append(server, 2);
  await until(() => got.length >= 2);
  expect(got).toEqual([1, 2]);
});
