// The optional members of `RevisionedLog` through the tabs' log (docs/offline.md, "Tabs"), run in
// Node against a real nats-server over WebSocket (the `ws` package stands in for the browser's),
// with two TabLogs of one origin: the leading tab's JetStreamLog answers the follower tab. Before,
// TabLog had none of them: a follower tab could not tell that its message id was taken by an entry
// on another key's subject (its update resolved as committed, lost), its replica heard none of its
// log's warnings, polled the configuration, and had no identity prefix to refuse another log's
// snapshot by.
import {
  createSynchronizer,
  JetStreamLog,
  type LogConfigWatcher,
  type RevisionedLog,
  type StateSyncError,
  type StateSynchronizer,
} from "@statesync/browser";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { connect, headers, type NatsConnection } from "nats.ws";
import WebSocket from "ws";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { openTabLog } from "../src/tabs/open-tab-log.js";
import type { TabLog } from "../src/tabs/tab-log.js";
import { FakeLocks, FakeStorage } from "./support/fake-tabs.js";
import { tally as counter } from "../../node/test/support/models.js";
type Counter = StateSynchronizer<{ n: number }, (typeof counter)["commands"]>;

let server: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  (globalThis as { WebSocket?: unknown }).WebSocket ??= WebSocket;
  server = await startNatsServer();
  nc = await connect({ servers: server.wsUrl });
});
afterAll(async () => {
  await nc?.close();
  await server?.stop();
});
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

let streams = 0;
const uniqueStream = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${++streams}`;

/** Two tabs of one origin on `stream` (`key`: shared layout): `lead` leads, `follower` follows. */
async function twoTabs(stream: string, key?: string): Promise<{ lead: TabLog; follower: TabLog }> {
  const support = { locks: new FakeLocks(), tokens: new FakeStorage() };
  const name = `optional-${stream}`;
  const open = () => {
    const tab = openTabLog(name, support, { servers: server.wsUrl }, { stream, key });
    closing.push(() => tab.log.close());
    return tab.log;
  };
  const lead = open();
  await until(() => lead.leading && lead.status === "online");
  const follower = open();
  await until(() => follower.followsAnother && follower.status === "online");
  return { lead, follower };
}

/** The optional members of `T`. */
type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];
type Optional = OptionalKeys<RevisionedLog>;

/**
 * One check per optional member of `RevisionedLog`, that the follower tab's log gives what the
 * leading tab's `JetStreamLog` gives: the type makes a member added to `RevisionedLog` without a
 * check here (and so, likely, without forwarding in `TabLog`) a type error
 * (`tsc -p tsconfig.test.json`).
 */
const checks: Record<Optional, (stream: string) => Promise<void>> = {
  async identityPrefix(stream) {
    const { lead, follower } = await twoTabs(stream, "k1");
    const own = new JetStreamLog({ connection: nc, stream, key: "k1" });
    closing.push(() => own.close());
    expect(own.identityPrefix).toBe(`jetstream:${stream}:${stream}.k1`);
    expect(lead.identityPrefix).toBe(own.identityPrefix);
    expect(follower.identityPrefix).toBe(own.identityPrefix);
  },

  async otherStateAt(stream) {
    const { lead, follower } = await twoTabs(stream, "k1");
    await lead.info(); // the leader's log creates the shared stream
    const other = await nc.jetstream().publish(`${stream}.k2`, "another key's entry");
    const own = await follower.appendUnconditional(new Uint8Array([1]), "own-1");
    expect(await follower.otherStateAt(other.seq)).toBe(true);
    expect(await follower.otherStateAt(own.revision)).toBe(false);
    expect(await follower.otherStateAt(own.revision + 100)).toBe(false);
  },

  async watchConfig(stream) {
    const { lead, follower } = await twoTabs(stream, "k1");
    await lead.info();
    const seen: string[] = [];
    const watcher: LogConfigWatcher = {
      onChange: () => seen.push("change"),
      onUnavailable: () => seen.push("unavailable"),
    };
    const stop = follower.watchConfig(watcher);
    closing.push(async () => stop());
    await lead.info(); // a round trip after the leader's advisory subscription
    const before = seen.length;
    const jsm = await nc.jetstreamManager();
    const { config } = await jsm.streams.info(stream);
    await jsm.streams.update(stream, { ...config, description: "edited by an operator" });
    await until(() => seen.length > before);
    expect(seen.slice(before)).toEqual(["change"]);
  },

  async watchWarnings(stream) {
    // A stream made without deny_delete: usable, with one STREAM_CONFIG warning.
    const jsm = await nc.jetstreamManager();
    await jsm.streams.add({ name: stream, subjects: [`${stream}.>`] });
    const { lead, follower } = await twoTabs(stream, "k1");
    await lead.info();
    const heard: StateSyncError[] = [];
    const stop = follower.watchWarnings((w) => heard.push(w));
    closing.push(async () => stop());
    await until(() => heard.length > 0);
    expect(heard).toHaveLength(1);
    expect(heard[0]!.code).toBe("STREAM_CONFIG");
    expect(heard[0]!.details).toMatchObject({ stream, usable: true });
    expect(heard[0]!.message).toMatch(/deny_delete is off/);
  },
};

for (const member of Object.keys(checks) as Optional[]) {
  it(`a follower tab's ${member} gives what the leading tab's JetStreamLog gives`, async () => {
    await checks[member](uniqueStream("TABOPT"));
  });
}

/** Stores raw entries under the next `n` message ids `writer` will use, on another key's subject. */
async function squatNextIds(stream: string, writer: Counter): Promise<void> {
  const last = (await writer.history()).at(-1)!.messageId!;
  const [, prefix, seq] = /^(.*)-(\d+)$/.exec(last)!;
  const h = headers();
  // A shared stream's ids are `<subject>:<id>`; the server drops a duplicate stream-wide.
  h.set("Nats-Msg-Id", `${stream}.k1:${prefix}-${Number(seq) + 1}`);
  const forged = { v: 1, ts: 1, client: "other", kind: "command", seed: 1, name: "add" };
  await nc.jetstream().publish(`${stream}.k2`, JSON.stringify({ ...forged, args: { by: 100 } }), {
    headers: h,
  });
}

for (const kind of ["conditional", "unconditional"] as const) {
  it(`a follower tab's update whose id an entry on another key's subject took does not pass (${kind})`, async () => {
    // packages/node/test/faults/taken-message-id.test.ts, through a follower tab.
    const stream = uniqueStream("TABTAKEN");
    const { follower } = await twoTabs(stream, "k1");
    const writer = (await createSynchronizer({
      log: follower,
      model: counter,
      clientId: "follower",
      compaction: false,
      waitFor: "restored",
    })) as Counter;
    closing.push(() => writer.close());
    await writer.update("add", { by: 1 });
    await squatNextIds(stream, writer);
    const { revision } =
      kind === "conditional"
        ? await writer.update("add", { by: 1 })
        : await writer.updateUnconditionally("add", { by: 1 });
    const late = new JetStreamLog({ connection: nc, stream, key: "k1" });
    const reader = (await createSynchronizer({
      log: late,
      ownsLog: true,
      model: counter,
      compaction: false,
      waitFor: "synced",
    })) as Counter;
    closing.push(() => reader.close());
    const entry = (await reader.history({ from: revision, to: revision }))[0];
    expect(entry?.clientId).toBe("follower");
    expect(reader.state.n).toBe(2);
    await until(() => writer.revision === reader.revision);
    expect(writer.state).toEqual(reader.state);
  });
}
