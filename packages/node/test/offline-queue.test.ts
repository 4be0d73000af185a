import { fork } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  createSynchronizer,
  defineModel,
  getFreePort,
  JetStreamLog,
  openSynchronizer,
} from "@statesync/node";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { tcp, uniqueStream, until, useNatsServer } from "./helpers.js";
import { TcpProxy } from "./support/tcp-proxy.js";

/**
 * The offline queue on a real nats-server (both servers of the matrix): edits made while a
 * replica's connection is cut are kept on disk, survive a restart, and commit in order, once,
 * beside a writer that kept editing; a process killed between an append and its removal from
 * the queue is counted once after its restart.
 */
const ctx = useNatsServer();

const board = defineModel({
  name: "board",
  state: z.object({ cards: z.array(z.string()), n: z.number().int() }),
  initial: { cards: [], n: 0 },
  commands: {
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
    take: {
      args: z.object({ card: z.string() }),
      apply(d, { card }) {
        const i = d.cards.indexOf(card);
        if (i < 0) throw new Error(`no card ${card}`);
        d.cards.splice(i, 1);
      },
    },
    bump: { args: z.object({}), apply: (d) => void (d.n += 1) },
  },
});

const CRASH_CLIENT = fileURLToPath(new URL("./support/queue-crash-client.mjs", import.meta.url));

/** Entries of the stream that carry an origin (queued updates), by (origin, seq). */
async function originEntries(stream: string, key?: string) {
  const nc = await tcp(ctx.server.url);
  try {
    const log = await JetStreamLog.open({ connection: nc, stream, ...(key ? { key } : {}) });
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

describe("the offline queue on nats-server", () => {
  it.each([
    ["its own stream", undefined],
    ["a shared stream", "board-1"],
  ])(
    "edits made offline survive a restart and commit once, in order, beside a writer that kept editing (%s)",
    async (_layout, key) => {
      const stream = uniqueStream("QUEUE");
      const snapshotDir = path.join(ctx.dir, stream);
      const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
      const other = await openSynchronizer({
        servers: ctx.server.url,
        stream,
        ...(key ? { key } : {}),
        model: board,
        snapshots: false,
      });
      const open = () =>
        openSynchronizer({
          servers: proxy.url,
          connectOptions: { reconnectTimeWait: 100 },
          stream,
          ...(key ? { key } : {}),
          model: board,
          snapshotDir,
          pending: { owner: "laptop" },
        });
      let a = await open();
      await other.update("add", { card: "x" });
      await a.waitFor(other.revision);
      proxy.setRefusing(true);
      proxy.cutAll();
      await until(() => (a.status === "offline" ? true : undefined));
      const queued = [
        a.update("add", { card: "a1" }),
        a.updateUnconditionally("bump", {}),
        a.update("take", { card: "x" }),
        a.update("add", { card: "a2" }),
      ];
      const outcomes = queued.map((p) => p.catch((e: unknown) => e));
      const infos = await Promise.all(queued.map((p) => p.queued));
      expect(infos.map((q) => [q.id! - infos[0]!.id!, q.durable])).toEqual([
        [0, true],
        [1, true],
        [2, true],
        [3, true],
      ]);
      expect(a.optimisticState).toEqual({ cards: ["a1", "a2"], n: 1 });
      for (let i = 0; i < 10; i++) await other.update("add", { card: `o${i}` });
      await other.update("take", { card: "x" }); // so the queued take is refused on rebase
      await a.close(); // a restart while offline: the queue is on disk
      for (const o of await Promise.all(outcomes)) expect(o).toMatchObject({ code: "CLOSED" });
      const files = await readdir(snapshotDir, { recursive: true });
      expect(files.filter((f) => f.endsWith(".pending.json"))).toHaveLength(4);
      a = await open();
      expect(a.pending.map((u) => u.command)).toEqual(["add", "bump", "take", "add"]);
      const refused: string[] = [];
      a.on("refused", (e, u) => refused.push(`${e.code}:${u.id}`));
      proxy.setRefusing(false);
      await a.flush();
      expect(refused).toEqual([`UPDATE_REFUSED:${infos[2]!.id}`]);
      const others = Array.from({ length: 10 }, (_, i) => `o${i}`);
      expect(a.state).toEqual({ cards: [...others, "a1", "a2"], n: 1 });
      await other.waitFor(a.revision);
      expect(other.state).toEqual(a.state);
      expect(await originEntries(stream, key)).toHaveLength(3);
      const after = await readdir(snapshotDir, { recursive: true });
      expect(after.filter((f) => f.endsWith(".pending.json"))).toHaveLength(0);
      await Promise.all([a.close(), other.close()]);
      await proxy.stop();
    },
  );

  it.each(["update", "command"])(
    "a process killed between the append of a queued %s and its removal: after a restart it counts once",
    async (kind) => {
      const stream = uniqueStream("QCRASH");
      const snapshotDir = path.join(ctx.dir, stream);
      const child = fork(
        CRASH_CLIENT,
        [ctx.server.url, stream, snapshotDir, "worker", kind, "c1"],
        {
          stdio: "ignore",
        },
      );
      const exit = new Promise<NodeJS.Signals | null>((resolve) =>
        child.on("exit", (_code, signal) => resolve(signal)),
      );
      expect(await exit).toBe("SIGKILL");
      expect(await originEntries(stream)).toHaveLength(1); // appended, then killed
      const files = await readdir(snapshotDir, { recursive: true });
      expect(files.filter((f) => f.endsWith(".pending.json"))).toHaveLength(1); // still queued
      const b = await openSynchronizer({
        servers: ctx.server.url,
        stream,
        model: board,
        snapshotDir,
        pending: { owner: "worker" }, // the dead process's lock is taken over
      });
      await b.flush();
      expect(b.pendingCount).toBe(0);
      expect(b.state.cards).toEqual(["c1"]);
      await b.update("add", { card: "c2" });
      expect(await originEntries(stream)).toHaveLength(2); // the first was not sent again
      const left = await readdir(snapshotDir, { recursive: true });
      expect(left.filter((f) => f.endsWith(".pending.json"))).toHaveLength(0);
      await b.close();
    },
  );

  it("refuses a bad pending option with VALIDATION naming the problem, and discard of a bad id", async () => {
    const base = {
      servers: "nats://127.0.0.1:1",
      stream: "S",
      model: board,
      snapshots: false,
    } as const;
    const cases: Array<[unknown, RegExp]> = [
      [{ owner: "ok", ownr: "typo" }, /ownr/],
      [true, /pending must be \{ owner, store\? \}, or false/],
      [{}, /owner/],
      [{ owner: "o", store: {} }, /PendingStore/],
    ];
    for (const [pending, message] of cases) {
      const error = await openSynchronizer({ ...base, pending: pending as never }).catch((e) => e);
      expect(error).toMatchObject({ code: "VALIDATION" });
      expect(String(error.message)).toMatch(message);
    }
    const nc = await tcp(ctx.server.url);
    const log = new JetStreamLog({ connection: nc, stream: uniqueStream("D") });
    const sync = await createSynchronizer({ log, ownsLog: true, model: board });
    for (const id of ["1", -1, null, 1.5]) {
      await expect(sync.discard(id as never)).rejects.toMatchObject({ code: "VALIDATION" });
    }
    await sync.close();
    await nc.close();
  });

  it("updates queued while the server was never reached leave no wait behind each (no listener leak)", async () => {
    // Found by a fresh-eyes trial: each queued update left a 30 s timer and an abort listener on
    // the replica's signal (Node's MaxListenersExceededWarning after about 10).
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    const dir = await mkdtemp(path.join(tmpdir(), "statesync-offline-"));
    const sync = await openSynchronizer({
      servers: `nats://127.0.0.1:${await getFreePort()}`, // nothing listens there
      stream: uniqueStream("NEVER"),
      model: board,
      snapshotDir: dir,
      pending: { owner: "o" },
      waitFor: "restored",
    });
    try {
      for (let i = 0; i < 30; i++) {
        const p = sync.update("add", { card: `c${i}` });
        p.catch(() => undefined);
        await p.queued;
      }
      await new Promise((r) => setTimeout(r, 200));
      expect(sync.pendingCount).toBe(30);
      expect(warnings.filter((w) => /MaxListeners/.test(w))).toEqual([]);
    } finally {
      process.off("warning", onWarning);
      await sync.close().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a second process on the same snapshot directory and owner gets QUEUE_LOCKED", async () => {
    const stream = uniqueStream("QLOCK");
    const snapshotDir = path.join(ctx.dir, stream);
    const options = { servers: ctx.server.url, stream, model: board, snapshotDir };
    const a = await openSynchronizer({ ...options, pending: { owner: "svc" } });
    await expect(openSynchronizer({ ...options, pending: { owner: "svc" } })).rejects.toMatchObject(
      {
        code: "QUEUE_LOCKED",
      },
    );
    const b = await openSynchronizer({ ...options, pending: { owner: "svc-2" } });
    await Promise.all([a.close(), b.close()]);
    const again = await openSynchronizer({ ...options, pending: { owner: "svc" } });
    await again.close();
  });

  it("replicas skip a re-sent (origin, seq) after a compaction of the stream", async () => {
    const stream = uniqueStream("QDUP");
    const snapshotDir = path.join(ctx.dir, stream);
    const a = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: board,
      snapshotDir,
      pending: { owner: "w" },
    });
    await a.updateUnconditionally("bump", {});
    const [origin] = await originEntries(stream);
    await a.compact();
    const nc = await tcp(ctx.server.url);
    const log = await JetStreamLog.open({ connection: nc, stream });
    const [id, seq] = origin!.split("#");
    const resend = JSON.stringify({
      v: 2,
      kind: "command",
      ts: Date.now(),
      client: "x",
      seed: 1,
      name: "bump",
      args: {},
      origin: [id, Number(seq)],
    });
    await log.appendUnconditional(new TextEncoder().encode(resend), "resend-1");
    const fresh = await createSynchronizer({ log, model: board });
    expect(fresh.state.n).toBe(1);
    await a.waitFor(fresh.revision);
    expect(a.state.n).toBe(1);
    await Promise.all([a.close(), fresh.close()]);
    await nc.close();
  });
});
