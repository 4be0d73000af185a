import { readdir } from "node:fs/promises";
import path from "node:path";
import {
  defineModel,
  JetStreamLog,
  openSynchronizer,
  startNatsServer,
  type StateSyncError,
} from "@statesync/node";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { tcp, uniqueStream, until, useNatsServer } from "./helpers.js";
import { TcpProxy } from "./support/tcp-proxy.js";

/**
 * docs/offline.md, "One log", on nats-server (both servers of the matrix): updates queued while
 * the server was unreachable are bound to the stream they were queued for (its creation time,
 * the identity the local snapshot is checked by). A stream of the same name deleted and created
 * again, or on another server, gets none of them: they are set aside with a `LOG_REPLACED`
 * event and kept on disk until the app decides. Before, they were pushed into it.
 */
const ctx = useNatsServer();

const board = defineModel({
  name: "board",
  state: z.object({ cards: z.array(z.string()), n: z.number().int() }),
  initial: { cards: [], n: 0 },
  commands: {
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
    bump: { args: z.object({}), apply: (d) => void (d.n += 1) },
  },
});

/** `(origin, seq)` of the stream's entries that carry queued updates, on the server at `url`. */
async function originEntries(url: string, stream: string): Promise<string[]> {
  const nc = await tcp(url);
  try {
    const log = await JetStreamLog.open({ connection: nc, stream });
    const out: string[] = [];
    const latest = (await log.info()).latestRevision;
    for await (const e of log.read(1, latest)) {
      const entry = JSON.parse(new TextDecoder().decode(e.data)) as { origin?: [string, number] };
      if (entry.origin) out.push(entry.origin.join("#"));
    }
    return out;
  } finally {
    await nc.close();
  }
}

/** The pending record files in the snapshot directory. */
async function recordFiles(snapshotDir: string): Promise<string[]> {
  const files = await readdir(snapshotDir, { recursive: true });
  return files.filter((f) => f.endsWith(".pending.json"));
}

/** A replica of `stream` on `servers` with the queue of "laptop" in `snapshotDir`. */
async function openQueued(servers: string, stream: string, snapshotDir: string) {
  const errors: StateSyncError[] = [];
  const sync = await openSynchronizer({
    servers,
    connectOptions: { reconnectTimeWait: 100 },
    stream,
    model: board,
    snapshotDir,
    pending: { owner: "laptop" },
    onError: (e) => errors.push(e),
  });
  const setAside = async () => {
    const find = () => errors.find((e) => e.code === "LOG_REPLACED");
    await until(() => find());
    return find()!;
  };
  return Object.assign(sync, { errors, setAside });
}

/**
 * Through `proxy` (to the server of `stream`): a replica that is live, then cut off, queues two
 * updates and closes with them on disk. Returns their ids.
 */
async function queueWhileUnreachable(proxy: TcpProxy, stream: string, snapshotDir: string) {
  const a = await openQueued(proxy.url, stream, snapshotDir);
  await a.update("add", { card: "seed" });
  proxy.setRefusing(true);
  proxy.cutAll();
  await until(() => (a.status === "offline" ? true : undefined));
  const queued = [a.update("add", { card: "q1" }), a.updateUnconditionally("bump", {})];
  const ids = (await Promise.all(queued.map((p) => p.queued))).map((q) => q.id!);
  await a.close();
  await Promise.allSettled(queued);
  expect(await recordFiles(snapshotDir)).toHaveLength(2);
  proxy.setRefusing(false);
  return ids;
}

describe("queued updates and another log, on nats-server", () => {
  it("a stream deleted and created again gets none of them: set aside, kept on disk, pushed once on rebindPending()", async () => {
    const stream = uniqueStream("QLOG");
    const snapshotDir = path.join(ctx.dir, stream);
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    const ids = await queueWhileUnreachable(proxy, stream, snapshotDir);
    // An operator deletes the stream; another app's replica creates it again and writes.
    const nc = await tcp(ctx.server.url);
    await (await nc.jetstreamManager()).streams.delete(stream);
    await nc.close();
    const fresh = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: board,
      snapshots: false,
    });
    await fresh.update("add", { card: "fresh" });

    const b = await openQueued(proxy.url, stream, snapshotDir);
    const event = await b.setAside();
    expect(event.details).toMatchObject({ otherLog: true, count: 2, ids });
    expect(b.status).toBe("live");
    expect(b.pending.map((u) => [u.id, u.otherLog])).toEqual([
      [ids[0], true],
      [ids[1], true],
    ]);
    await expect(b.flush()).rejects.toMatchObject({ code: "LOG_REPLACED" });
    expect(await originEntries(ctx.server.url, stream)).toEqual([]);
    expect(b.state).toEqual({ cards: ["fresh"], n: 0 });
    expect(await recordFiles(snapshotDir)).toHaveLength(2); // kept until the app decides

    // The app's decision: push them into the new stream on purpose.
    expect(await b.rebindPending()).toBe(2);
    await b.flush();
    expect(b.state).toEqual({ cards: ["fresh", "q1"], n: 1 });
    expect(await originEntries(ctx.server.url, stream)).toHaveLength(2);
    expect(await recordFiles(snapshotDir)).toHaveLength(0);
    await fresh.waitFor(b.revision);
    expect(fresh.state).toEqual(b.state);
    await Promise.all([b.close(), fresh.close()]);
    await proxy.stop();
  });

  it("another server with the same stream name gets none of them; their own server, reached again, gets each once", async () => {
    const stream = uniqueStream("QSRV");
    const snapshotDir = path.join(ctx.dir, stream);
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    const other = await startNatsServer();
    try {
      const ids = await queueWhileUnreachable(proxy, stream, snapshotDir);
      // Restarted with another URL: a server whose stream has the same name.
      const b = await openQueued(other.url, stream, snapshotDir);
      expect((await b.setAside()).details).toMatchObject({ otherLog: true, ids });
      expect(b.pendingCount).toBe(2);
      expect(b.optimisticState).toEqual(board.initial);
      expect(await originEntries(other.url, stream)).toEqual([]);
      await b.close();
      expect(await recordFiles(snapshotDir)).toHaveLength(2);

      // Back on the log they were queued for: pushed, each once, in order.
      const c = await openQueued(proxy.url, stream, snapshotDir);
      await c.flush();
      expect(c.state).toEqual({ cards: ["seed", "q1"], n: 1 });
      expect(c.errors.filter((e) => e.code === "LOG_REPLACED")).toEqual([]);
      expect(await originEntries(ctx.server.url, stream)).toHaveLength(3);
      expect(await recordFiles(snapshotDir)).toHaveLength(0);
      await c.close();
    } finally {
      await other.stop();
      await proxy.stop();
    }
  });
});
