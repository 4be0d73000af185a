import {
  defineModel,
  JetStreamLog,
  openJetStreamSynchronizer,
  stateHash,
  type LogEntry,
  type StateSyncError,
} from "@statesync/node";
import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { bytes, tcp, uniqueStream, until, useNatsServer } from "./helpers.js";
import { counter } from "./support/models.js";
import { TcpProxy } from "./support/tcp-proxy.js";

// Fan-out followers (docs/fanout.md): entries republished on a core subject, gaps read back.
const ctx = useNatsServer();
let proxy: TcpProxy;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port }, { parse: true });
});
afterAll(async () => {
  await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
  await proxy.stop();
});

async function direct(): Promise<NatsConnection> {
  const nc = await tcp(ctx.server.url);
  connections.push(nc);
  return nc;
}
async function throughProxy(): Promise<NatsConnection> {
  const nc = await connect({
    servers: proxy.url,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 100,
  });
  connections.push(nc);
  return nc;
}

/** n of a republished frame whose data is `e<n>` as the proxy sees it, or undefined. */
function entryNumber(frame: string): number | undefined {
  const m = /\r\n\r\ne(\d+)\r\n$/.exec(frame);
  return m ? Number(m[1]) : undefined;
}

/** Follows with `log` from revision 1 and collects what it delivers. */
function collect(log: JetStreamLog) {
  const got: LogEntry[] = [];
  const errors: unknown[] = [];
  const follower = log.follow(1, { onEntry: (e) => got.push(e), onError: (e) => errors.push(e) });
  return { got, errors, follower };
}

const layouts = [
  { name: "own stream", key: undefined, other: undefined },
  { name: "shared stream", key: "tenant-a.board", other: "tenant-b.board" },
] as const;

describe.each(layouts)("fan-out follower, $name", ({ key, other }) => {
  it("fills republished entries that never arrived from the log and converges", async () => {
    const stream = uniqueStream("FAN");
    const writer = await JetStreamLog.open({
      connection: await direct(),
      stream,
      key,
      fanout: true,
    });
    const neighbour = other
      ? await JetStreamLog.open({ connection: await direct(), stream, key: other, fanout: true })
      : undefined;
    const reader = await JetStreamLog.open({
      connection: await throughProxy(),
      stream,
      key,
      fanout: { tailCheckMs: 300 },
    });
    const live = `statesync.live.${writer.subject}`;
    // Drops every third entry, a run of 40 (past the direct-get gap size: read through a
    // consumer), and the last one (only the tail check can find it).
    const total = 90;
    const dropped = new Set<number>();
    proxy.dropDelivered((subject, frame) => {
      if (subject !== live) return false;
      const n = entryNumber(frame);
      const drop = n !== undefined && (n % 3 === 0 || (n > 40 && n <= 80) || n === total);
      if (drop) dropped.add(n);
      return drop;
    });
    const { got, errors, follower } = collect(reader);
    await until(() => reader.liveVia);
    expect(reader.liveVia).toBe("republish");
    const revisions: number[] = [];
    for (let n = 1; n <= total; n++) {
      const { revision } = await writer.appendUnconditional(bytes(`e${n}`), `m${n}`);
      revisions.push(revision);
      if (neighbour) await neighbour.appendUnconditional(bytes(`x${n}`), `x${n}`);
    }
    await until(() => (got.length >= total ? true : undefined), 30_000);
    await new Promise((r) => setTimeout(r, 300)); // nothing more (no duplicates) comes
    proxy.dropDelivered(undefined);
    await follower.stop();
    expect(errors).toEqual([]);
    expect(dropped.size).toBeGreaterThan(40);
    expect(dropped.has(total)).toBe(true);
    expect(got.map((e) => e.revision)).toEqual(revisions);
    expect(got.map((e) => new TextDecoder().decode(e.data))).toEqual(
      revisions.map((_, i) => `e${i + 1}`),
    );
    expect(got.map((e) => e.messageId)).toEqual(revisions.map((_, i) => `m${i + 1}`));
    await Promise.all([writer.close(), reader.close(), neighbour?.close()]);
  });

  it("replicas on fan-out converge on one state, and do not compact by default", async () => {
    const stream = uniqueStream("FANS");
    const model = defineModel({
      name: "fan-counter",
      state: z.object({ n: z.number().int(), seen: z.array(z.number().int()) }),
      initial: { n: 0, seen: [] },
      commands: {
        add: {
          args: z.object({ i: z.number().int() }),
          apply(d, { i }) {
            d.n += i;
            d.seen.push(i);
          },
        },
      },
    });
    const open = async (nc: NatsConnection) =>
      openJetStreamSynchronizer({
        connection: nc,
        stream,
        key,
        model,
        snapshots: false,
        fanout: { tailCheckMs: 300 },
      });
    const writer = await open(await direct());
    const readers = [await open(await throughProxy()), await open(await throughProxy())];
    let k = 0;
    proxy.dropDelivered((subject) => subject.startsWith("statesync.live.") && ++k % 4 === 0);
    for (let i = 1; i <= 40; i++) await writer.updateUnconditionally("add", { i });
    await Promise.all(readers.map((r) => r.waitFor(writer.revision)));
    proxy.dropDelivered(undefined);
    expect(proxy.dropped).toBeGreaterThan(0);
    for (const r of readers) {
      expect(stateHash(r.state)).toBe(stateHash(writer.state));
      expect(r.state.seen).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(r.stats.compactions).toBe(0);
    }
    await Promise.all([writer.close(), ...readers.map((r) => r.close())]);
  });
});

describe.each(layouts)("fan-out follower across a dropped connection, $name", ({ key }) => {
  it("reads what was stored while it was disconnected, also with nothing stored after", async () => {
    const stream = uniqueStream("FANR");
    const writer = await JetStreamLog.open({
      connection: await direct(),
      stream,
      key,
      fanout: true,
    });
    const reader = await JetStreamLog.open({
      connection: await throughProxy(),
      stream,
      key,
      // The quiet-time check would come too late for this test: the reconnection must do it.
      fanout: { tailCheckMs: 600_000, reconnectJitterMs: 200 },
    });
    const { got, errors, follower } = collect(reader);
    await until(() => reader.liveVia);
    await writer.appendUnconditional(bytes("a"), "a");
    await until(() => (got.length >= 1 ? true : undefined));
    proxy.setRefusing(true);
    proxy.cutAll();
    await until(() => (reader.status === "offline" ? true : undefined));
    for (const id of ["b", "c", "d"]) await writer.appendUnconditional(bytes(id), id);
    proxy.setRefusing(false);
    await until(() => (got.length >= 4 ? true : undefined), 20_000);
    await follower.stop();
    expect(errors).toEqual([]);
    expect(got.map((e) => e.messageId)).toEqual(["a", "b", "c", "d"]);
    await Promise.all([writer.close(), reader.close()]);
  });
});

describe.each(layouts)("fan-out when an operator removes the republish rule, $name", ({ key }) => {
  it("the follower goes on with a consumer, losing nothing", async () => {
    const stream = uniqueStream("FANX");
    const nc = await direct();
    const writer = await JetStreamLog.open({ connection: nc, stream, key, fanout: true });
    const reader = await JetStreamLog.open({
      connection: await direct(),
      stream,
      key,
      fanout: { tailCheckMs: 300 },
    });
    const { got, errors, follower } = collect(reader);
    await until(() => reader.liveVia);
    expect(reader.liveVia).toBe("republish");
    await writer.appendUnconditional(bytes("a"), "a");
    await until(() => (got.length >= 1 ? true : undefined));
    const jsm = await nc.jetstreamManager();
    const { config } = await jsm.streams.info(stream);
    const removed = await jsm.streams.update(stream, { ...config, republish: undefined }).then(
      () => true,
      (e: { api_error?: { err_code?: number } }) => e.api_error?.err_code,
    );
    const v = nc.info!.version.split(".").map(Number);
    if (v[0] === 2 && v[1]! < 10) {
      // 2.9 can neither add nor remove the rule of an existing stream (docs/fanout.md).
      expect(removed).toBe(10052);
    } else {
      expect(removed).toBe(true);
    }
    for (const id of ["b", "c"]) await writer.appendUnconditional(bytes(id), id);
    if (removed === true) await until(() => (reader.liveVia === "consumer" ? true : undefined));
    await writer.appendUnconditional(bytes("d"), "d");
    await until(() => (got.length >= 4 ? true : undefined));
    await new Promise((r) => setTimeout(r, 200));
    await follower.stop();
    expect(errors).toEqual([]);
    expect(got.map((e) => e.messageId)).toEqual(["a", "b", "c", "d"]);
    await Promise.all([writer.close(), reader.close()]);
  });
});

describe.each(layouts)("fan-out with compaction by the writer, $name", ({ key }) => {
  it("followers that miss entries a compaction truncated converge on the snapshot", async () => {
    const stream = uniqueStream("FANC");
    const model = defineModel({
      name: "fan-list",
      state: z.object({ items: z.array(z.number().int()) }),
      initial: { items: [] },
      commands: {
        push: {
          args: z.object({ i: z.number().int() }),
          apply(d, { i }) {
            d.items.push(i);
          },
        },
      },
    });
    const writer = await openJetStreamSynchronizer({
      connection: await direct(),
      stream,
      key,
      model,
      snapshots: false,
      fanout: true,
      compaction: { everyEntries: 8, jitter: 0 },
    });
    const reader = await openJetStreamSynchronizer({
      connection: await throughProxy(),
      stream,
      key,
      model,
      snapshots: false,
      // Only the next republished entry tells the reader what it missed: after the compaction.
      fanout: { tailCheckMs: 600_000 },
    });
    // The reader misses a long run of entries, during which the writer compacts.
    let dropping = false;
    proxy.dropDelivered((subject) => dropping && subject.startsWith("statesync.live."));
    await writer.updateUnconditionally("push", { i: 0 });
    await reader.waitFor(writer.revision);
    dropping = true;
    for (let i = 1; i <= 30; i++) await writer.updateUnconditionally("push", { i });
    await until(() => (writer.stats.compactions > 0 ? true : undefined));
    dropping = false;
    await writer.updateUnconditionally("push", { i: 31 });
    await reader.waitFor(writer.revision);
    proxy.dropDelivered(undefined);
    expect(reader.state.items).toEqual(Array.from({ length: 32 }, (_, i) => i));
    expect(stateHash(reader.state)).toBe(stateHash(writer.state));
    expect(reader.stats.compactions).toBe(0);
    // It could not read the truncated entries: it stood on a snapshot entry instead.
    expect(reader.stats.entriesFetched).toBeLessThan(32);
    await Promise.all([writer.close(), reader.close()]);
  });
});

describe("fan-out follower and its receiver's own reads", () => {
  it("goes on from the revision the receiver says it has, reading nothing twice", async () => {
    const stream = uniqueStream("FANH");
    const writer = await JetStreamLog.open({ connection: await direct(), stream, fanout: true });
    const revisions: number[] = [];
    for (const id of ["a", "b", "c", "d"]) {
      revisions.push((await writer.appendUnconditional(bytes(id), id)).revision);
    }
    const reader = await JetStreamLog.open({ connection: await direct(), stream, fanout: true });
    // The receiver read up to "b" itself (as the engine's catch-up does).
    let has = revisions[1]!;
    const got: Array<string | undefined> = [];
    const follower = reader.follow(1, {
      onEntry: (e) => {
        got.push(e.messageId);
        has = e.revision;
      },
      revision: () => has,
    });
    await until(() => (got.length >= 2 ? true : undefined));
    await writer.appendUnconditional(bytes("e"), "e");
    await until(() => (got.length >= 3 ? true : undefined));
    await new Promise((r) => setTimeout(r, 200));
    await follower.stop();
    expect(got).toEqual(["c", "d", "e"]);
    await Promise.all([writer.close(), reader.close()]);
  });
});

describe("fan-out on a stream created without it", () => {
  it("enable adds the republish rule where the server allows it (2.10), else consumers (2.9)", async () => {
    const stream = uniqueStream("FANE");
    const nc = await direct();
    const plain = await JetStreamLog.open({ connection: nc, stream });
    await plain.appendUnconditional(bytes("before"), "b");
    const reader = await JetStreamLog.open({
      connection: await direct(),
      stream,
      fanout: { enable: true },
    });
    const { got, errors, follower } = collect(reader);
    await until(() => reader.liveVia);
    const v = nc.info!.version.split(".").map(Number);
    const canUpdate = v[0]! > 2 || (v[0] === 2 && v[1]! >= 10);
    expect(reader.liveVia).toBe(canUpdate ? "republish" : "consumer");
    // The fallback is said, not silent (issue 13): a field, and a warning (once, also to a
    // listener added after it was given).
    const warnings: StateSyncError[] = [];
    reader.watchWarnings((w) => warnings.push(w));
    if (canUpdate) {
      expect(reader.fanoutRefused).toBeUndefined();
      expect(warnings).toEqual([]);
    } else {
      expect(reader.fanoutRefused?.code).toBe("STREAM_CONFIG");
      expect(reader.fanoutRefused?.details.fanout).toBe("consumers");
      expect(reader.fanoutRefused?.message).toMatch(
        /refused to add a republish rule.*fan-out is off/,
      );
      expect(warnings).toEqual([reader.fanoutRefused]);
    }
    await plain.appendUnconditional(bytes("after"), "a");
    await until(() => (got.length >= 2 ? true : undefined));
    expect(got.map((e) => e.messageId)).toEqual(["b", "a"]);
    expect(errors).toEqual([]);
    await follower.stop();
    await Promise.all([plain.close(), reader.close()]);
  });

  it("a replica opened with enable hears of a refusal as one STREAM_CONFIG error event (2.9), of none on 2.10", async () => {
    const stream = uniqueStream("FANS");
    const nc = await direct();
    const plain = await JetStreamLog.open({ connection: nc, stream });
    await plain.close();
    const errors: StateSyncError[] = [];
    const sync = await openJetStreamSynchronizer({
      connection: await direct(),
      stream,
      model: counter,
      snapshots: false,
      fanout: { enable: true },
      onError: (e) => errors.push(e),
    });
    try {
      await sync.update("increment", { by: 1 });
      const v = nc.info!.version.split(".").map(Number);
      const canUpdate = v[0]! > 2 || (v[0] === 2 && v[1]! >= 10);
      if (canUpdate) {
        expect(errors).toEqual([]);
      } else {
        expect(errors.map((e) => [e.code, e.details.fanout])).toEqual([
          ["STREAM_CONFIG", "consumers"],
        ]);
      }
      expect(sync.status).toBe("live");
      expect(sync.writable).toBe(true); // a warning, not a write failure
    } finally {
      await sync.close();
    }
  });

  it("without enable, a stream that has no republish rule is followed with a consumer", async () => {
    const stream = uniqueStream("FANN");
    const plain = await JetStreamLog.open({ connection: await direct(), stream });
    const reader = await JetStreamLog.open({ connection: await direct(), stream, fanout: true });
    const { got, follower } = collect(reader);
    await until(() => reader.liveVia);
    expect(reader.liveVia).toBe("consumer");
    await plain.appendUnconditional(bytes("x"), "x");
    await until(() => (got.length >= 1 ? true : undefined));
    await follower.stop();
    await Promise.all([plain.close(), reader.close()]);
  });
});
