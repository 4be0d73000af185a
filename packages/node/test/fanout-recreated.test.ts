import { JetStreamLog, openJetStreamSynchronizer, type LogEntry } from "@statesync/node";
import type { NatsConnection } from "nats";
import { afterAll, describe, expect, it } from "vitest";
import { bytes, tcp, text, uniqueStream, until, useNatsServer } from "./helpers.js";
import { counter } from "./support/models.js";

// A fan-out follower whose stream an operator deletes and creates again (same name, same
// republish rule) must stop with LOG_REPLACED and never apply an entry of the new stream
// (docs/fanout.md, "A stream deleted and created again"). Before, a follower at revision 50
// ignored the new stream's republished 1..50 as old and applied 51 (`Nats-Last-Sequence: 50`,
// its revision) and the rest on top of the old stream's state, silently.
const ctx = useNatsServer();
const connections: NatsConnection[] = [];
afterAll(async () => {
  await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
});

async function direct(): Promise<NatsConnection> {
  const nc = await tcp(ctx.server.url);
  connections.push(nc);
  return nc;
}

const cases = [
  {
    name: "own stream, follower heard the old entries",
    key: undefined,
    other: undefined,
    late: false,
  },
  { name: "own stream, follower opened after them", key: undefined, other: undefined, late: true },
  {
    name: "shared stream, follower heard the old entries",
    key: "tenant-a.board",
    other: undefined,
    late: false,
  },
  {
    name: "shared stream, follower opened after them",
    key: "tenant-a.board",
    other: undefined,
    late: true,
  },
  // The new stream holds another key's entries first: the state's first new entry names none
  // before it (`Nats-Last-Sequence: 0`) and the later ones name sequences the old log had.
  {
    name: "shared stream, another key first in the new stream",
    key: "tenant-a.board",
    other: "tenant-b.board",
    late: false,
  },
] as const;

describe.each(cases)("fan-out follower of a stream deleted and created again, $name", (c) => {
  it("stops with LOG_REPLACED and applies no entry of the new stream", async () => {
    const stream = uniqueStream("FANX");
    const open = async () =>
      JetStreamLog.open({ connection: await direct(), stream, key: c.key, fanout: true });
    const writer = await open();
    const reader = await JetStreamLog.open({
      connection: await direct(),
      stream,
      key: c.key,
      fanout: { tailCheckMs: 60_000 },
    });
    const got: LogEntry[] = [];
    const errors: { code?: string }[] = [];
    const follow = () =>
      reader.follow(1, { onEntry: (e) => got.push(e), onError: (e) => errors.push(e as never) });
    let follower = c.late ? undefined : follow();
    if (follower) await until(() => reader.liveVia);
    for (let n = 1; n <= 50; n++) await writer.appendUnconditional(bytes(`old${n}`), `old${n}`);
    follower ??= follow();
    await until(() => (got.length >= 50 ? true : undefined), 20_000);
    expect(reader.liveVia).toBe("republish");
    expect(got.at(-1)?.revision).toBe(50);

    const admin = await direct();
    await (await admin.jetstreamManager()).streams.delete(stream);
    const again = await open(); // the same name and republish rule, a new creation time
    if (c.other) {
      const neighbour = await JetStreamLog.open({
        connection: await direct(),
        stream,
        key: c.other,
        fanout: true,
      });
      for (let n = 1; n <= 30; n++) await neighbour.appendUnconditional(bytes(`x${n}`), `x${n}`);
      await neighbour.close();
    }
    for (let n = 1; n <= 60; n++) await again.appendUnconditional(bytes(`new${n}`), `new${n}`);

    // The follower stops on its own (no tail check is due within the test).
    await until(() => (errors.length > 0 ? true : undefined), 20_000).catch(() => undefined);
    await new Promise((r) => setTimeout(r, 300)); // nothing more arrives after the stop
    await follower.stop();
    const applied = got.map((e) => text(e.data));
    expect(applied.filter((d) => !d.startsWith("old"))).toEqual([]);
    expect(applied).toHaveLength(50);
    expect(errors.map((e) => e.code)).toEqual(["LOG_REPLACED"]);
    await Promise.all([writer.close(), reader.close(), again.close()]);
  });
});

describe.each([
  { name: "own stream", key: undefined },
  { name: "shared stream", key: "tenant-a.board" },
])("a fan-out replica whose stream is deleted and created again, $name", ({ key }) => {
  it("stalls with LOG_REPLACED, keeping the old stream's state", async () => {
    const stream = uniqueStream("FANXR");
    const open = async (tailCheckMs = 60_000) =>
      openJetStreamSynchronizer({
        connection: await direct(),
        stream,
        key,
        model: counter,
        snapshots: false,
        fanout: { tailCheckMs },
      });
    const writer = await open();
    const replica = await open();
    for (let n = 1; n <= 50; n++) await writer.updateUnconditionally("record", { id: `old${n}` });
    await replica.waitFor(writer.revision);
    const before = replica.state;
    await writer.close();
    const admin = await direct();
    await (await admin.jetstreamManager()).streams.delete(stream);
    const again = await open();
    for (let n = 1; n <= 60; n++) await again.updateUnconditionally("record", { id: `new${n}` });
    await until(() => (replica.status === "stalled" ? true : undefined), 20_000).catch(
      () => undefined,
    );
    expect(replica.state.seen.filter((id) => !id.startsWith("old"))).toEqual([]);
    expect(replica.state).toEqual(before);
    expect(replica.stallReason?.code).toBe("LOG_REPLACED");
    await Promise.all([replica.close(), again.close()]);
  });
});
