import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { openSynchronizer, stateHash, type StateSyncError } from "@statesync/node";
import { tcp, uniqueStream, until, useNatsServer } from "../helpers.js";
import { counter } from "../support/models.js";
import { TcpProxy } from "../support/tcp-proxy.js";

/**
 * Found by a second fresh-eyes trial (stop 17) of the purge and went-back rules: a replica of a
 * purged key stalled as if the log had gone back; a live writer committed on its old state into
 * the emptied key, which no fresh replica could then open; a fresh replica could not open an
 * emptied stream; and a replica restarting after an ordinary compaction compacted again (also
 * with `compaction: false`) as if the stream had been purged.
 */
describe("purges and compactions under replicas (real nats-server)", () => {
  const ctx = useNatsServer();
  const purge = async (stream: string, filter?: string) => {
    const nc = await tcp(ctx.server.url);
    await (await nc.jetstreamManager()).streams.purge(stream, filter ? { filter } : undefined);
    await nc.close();
  };

  it("a replica reconnecting to a purged key is not stalled, and starts again from its new genesis", async () => {
    const stream = uniqueStream("PKRC");
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    const where = { stream, key: "k1", model: counter, snapshots: false as const };
    const a = await openSynchronizer({ ...where, servers: proxy.url });
    try {
      for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
      proxy.setRefusing(true);
      proxy.cutAll();
      await until(() => a.status === "offline" || undefined);
      await purge(stream, `${stream}.k1`);
      proxy.setRefusing(false);
      await until(() => a.status === "live" || undefined);
      await a.synced();
      expect(a.status).toBe("live");
      const b = await openSynchronizer({ ...where, servers: ctx.server.url });
      const { revision } = await b.update("increment", { by: 7 });
      await a.waitFor(revision);
      expect(a.state).toEqual({ count: 7, seen: [] });
      await b.close();
    } finally {
      await a.close();
      await proxy.stop();
    }
  });

  it("a live writer's update on a purged key starts the key again; a fresh replica opens it", async () => {
    const stream = uniqueStream("PKLW");
    const where = {
      stream,
      key: "k1",
      servers: ctx.server.url,
      model: counter,
      snapshots: false as const,
    };
    const w = await openSynchronizer({ ...where, compaction: false as const });
    for (let i = 0; i < 3; i++) await w.update("increment", { by: 1 });
    await purge(stream, `${stream}.k1`);
    const { revision, state } = await w.update("increment", { by: 1 });
    expect(state).toEqual({ count: 1, seen: [] });
    const f = await openSynchronizer(where);
    await f.waitFor(revision);
    expect(stateHash(f.state)).toBe(stateHash(w.state));
    await Promise.all([w.close(), f.close()]);
  });

  it("a fresh replica opens a stream purged whole from the initial state", async () => {
    const stream = uniqueStream("PWF");
    const where = { stream, servers: ctx.server.url, model: counter, snapshots: false as const };
    const a = await openSynchronizer(where);
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    await a.close();
    await purge(stream);
    const f = await openSynchronizer(where);
    expect(f.state).toEqual(counter.initial);
    expect((await f.update("increment", { by: 2 })).state.count).toBe(2);
    await f.close();
  });

  it("a replica restarting from its snapshot after an ordinary compaction does not compact again", async () => {
    const stream = uniqueStream("RCOMP");
    const dir = await mkdtemp(path.join(tmpdir(), "rcomp-"));
    const errors: StateSyncError[] = [];
    const hOptions = {
      stream,
      servers: ctx.server.url,
      model: counter,
      snapshotDir: dir,
      compaction: false as const,
      onError: (e: StateSyncError) => errors.push(e),
    };
    try {
      let h = await openSynchronizer(hOptions);
      for (let i = 0; i < 3; i++) await h.update("increment", { by: 1 });
      await h.close();
      const d = await openSynchronizer({
        stream,
        servers: ctx.server.url,
        model: counter,
        snapshots: false,
      });
      for (let i = 0; i < 5; i++) await d.update("increment", { by: 1 });
      await d.compact();
      const { revision } = await d.update("increment", { by: 1 });
      await d.close();
      h = await openSynchronizer(hOptions);
      await h.waitFor(revision);
      // A compaction of its own would run in the background: one of its own update's
      // round trips later, it would have shown.
      await h.update("increment", { by: 1 });
      expect(h.stats.snapshotsRestored).toBe(1);
      expect(h.stats.compactions).toBe(0);
      expect(errors).toEqual([]);
      expect(h.state.count).toBe(10);
      await h.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a snapshot of a purged key is discarded as purged, not as ahead of the log", async () => {
    const stream = uniqueStream("PKSN");
    const dir = await mkdtemp(path.join(tmpdir(), "pksn-"));
    const errors: StateSyncError[] = [];
    const where = { stream, key: "k1", servers: ctx.server.url, model: counter, snapshotDir: dir };
    try {
      const a = await openSynchronizer(where);
      for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
      await a.close();
      await purge(stream, `${stream}.k1`);
      const again = await openSynchronizer({ ...where, onError: (e) => errors.push(e) });
      expect(again.state).toEqual(counter.initial);
      expect(errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
      expect(errors[0]!.message).toMatch(/holds none of its entries \(purged\)/);
      await again.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
