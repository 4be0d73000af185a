import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createSynchronizer,
  JetStreamLog,
  openSynchronizer,
  startNatsServer,
  stateHash,
  type NatsServer,
  type StateSyncError,
} from "@statesync/node";
import { codeOf, tcp, uniqueStream } from "./helpers.js";
import { blobs } from "./support/models.js";

const noAuto = { compaction: false, snapshots: false } as const;
/** About 50 KB of text per blob, with characters JSON escapes and one outside the BMP. */
const blob = (i: number) => `${i} "q" \\ é 😀 ${"abcdefghij".repeat(5_000)}`;

describe("chunked snapshots on nats-server", () => {
  let server: NatsServer; // default max_payload: 1 MiB
  let small: NatsServer; // max_payload 64 KiB: many parts from a small state
  beforeAll(async () => {
    [server, small] = await Promise.all([
      startNatsServer(),
      startNatsServer({ extraConfig: "max_payload: 65536" }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.stop(), small?.stop()]);
  });

  it("a hostile part 0 on a shared stream's key (based on an older revision) holds no replica back", async () => {
    // Fresh-eyes trial: every live replica started collecting at it and its revision stopped.
    const stream = uniqueStream("HPART");
    const opts = { servers: server.url, stream, key: "tenant.board", model: blobs, ...noAuto };
    const a = await openSynchronizer(opts);
    const b = await openSynchronizer(opts);
    for (let i = 0; i < 3; i++) await a.update("increment", {});
    await b.waitFor(a.revision);
    const nc = await tcp(server.url);
    const part0 = {
      v: 1,
      kind: "part",
      ts: 1,
      client: "x",
      id: "evil",
      index: 0,
      base: 1,
      data: "",
    };
    await nc.jetstream().publish(`${stream}.tenant.board`, JSON.stringify(part0));
    for (let i = 0; i < 3; i++) await b.updateUnconditionally("increment", {});
    await a.update("increment", {});
    await b.waitFor(a.revision);
    expect(b.state.count).toBe(7);
    const late = await openSynchronizer(opts);
    expect(late.revision).toBe(a.revision);
    expect(stateHash(late.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), b.close(), late.close(), nc.close()]);
  }, 30_000);

  it("compacts a state larger than max_payload (1 MiB) in parts that a fresh client loads", async () => {
    const stream = uniqueStream("CHUNK");
    const a = await openSynchronizer({ servers: server.url, stream, model: blobs, ...noAuto });
    const follower = await openSynchronizer({
      servers: server.url,
      stream,
      model: blobs,
      ...noAuto,
    });
    for (let i = 0; i < 50; i++)
      await a.updateUnconditionally("put", { key: `k${i}`, value: blob(i) });
    await a.synced();
    expect(JSON.stringify(a.state).length).toBeGreaterThan(2 * 1024 * 1024);
    const { revision } = await a.compact();
    const history = await a.history();
    expect(history[0]!.kind).toBe("part");
    expect(history.filter((h) => h.kind === "part").length).toBeGreaterThanOrEqual(3);
    expect(history.at(-1)).toMatchObject({ kind: "snapshot", revision });
    for (const h of history) expect(h.bytes).toBeLessThanOrEqual(1024 * 1024);
    const fresh = await openSynchronizer({ servers: server.url, stream, model: blobs, ...noAuto });
    expect(fresh.revision).toBe(revision);
    expect(stateHash(fresh.state)).toBe(stateHash(a.state));
    expect(fresh.stats.entriesApplied).toBe(0); // loaded, not replayed
    await follower.waitFor(revision);
    expect(stateHash(follower.state)).toBe(stateHash(a.state));
    expect(stateHash(await fresh.stateAt(revision))).toBe(stateHash(a.state));
    await Promise.all([a.close(), follower.close(), fresh.close()]);
  });

  it.each([
    ["own stream", undefined],
    ["shared stream", "tenant.one"],
  ])(
    "completes under a concurrent writer and a catch-up racing it (%s, max_payload 64 KiB)",
    async (_, key) => {
      const stream = uniqueStream("CHUNKW");
      const opts = { servers: small.url, stream, model: blobs, ...noAuto, ...(key ? { key } : {}) };
      const a = await openSynchronizer(opts);
      const w = await openSynchronizer(opts);
      const behind = await openSynchronizer({ ...opts, live: false });
      for (let i = 0; i < 12; i++)
        await a.updateUnconditionally("put", { key: `k${i}`, value: blob(i) });
      await a.compact(); // one more entry than fits: parts from here on
      await w.synced();
      let writing = true;
      const writes = (async () => {
        let n = 0;
        while (writing || n < 20) {
          await w.updateUnconditionally("increment", {});
          if (n % 4 === 0) await w.update((d) => void (d.items[`w${n}`] = "x"));
          n += 1;
        }
        return n;
      })();
      await a.updateUnconditionally("put", { key: "last", value: blob(99) });
      const { revision } = await a.compact();
      writing = false;
      const n = await writes;
      await Promise.all([a.synced(), w.synced()]);
      const history = await a.history();
      expect(history[0]!.kind).toBe("part");
      expect(history.some((h) => h.kind === "snapshot" && h.revision === revision)).toBe(true);
      // The replica that had read nothing since the start catches up across the truncation.
      await behind.fetchUpdates();
      const fresh = await openSynchronizer(opts);
      for (const r of [behind, fresh, a]) {
        expect(r.revision).toBe(w.revision);
        expect(stateHash(r.state)).toBe(stateHash(w.state));
      }
      expect(fresh.state.count).toBe(n);
      await Promise.all([a, w, behind, fresh].map((r) => r.close()));
    },
  );

  it("hostile parts: a fresh replica refuses them (CORRUPT_ENTRY, then TRUNCATED), a live one is not moved", async () => {
    const stream = uniqueStream("CHUNKH");
    const live = await openSynchronizer({ servers: small.url, stream, model: blobs, ...noAuto });
    await live.updateUnconditionally("increment", {});
    await live.synced();
    const base = live.revision;
    const nc = await tcp(small.url);
    const log = new JetStreamLog({ connection: nc, stream });
    const text = JSON.stringify({ count: 99, items: {} });
    const head = { ts: 1, client: "hostile", id: "h", base };
    const raw = (o: object, id: string) =>
      log.appendUnconditional(new TextEncoder().encode(JSON.stringify(o)), id);
    const first = (await raw({ v: 1, kind: "part", ...head, index: 0, data: "" }, "h0")).revision;
    await raw({ v: 1, kind: "part", ...head, index: 1, data: text }, "h1");
    await raw(
      {
        v: 2,
        kind: "snapshot",
        ts: 1,
        client: "hostile",
        base,
        model: "blobs",
        version: 1,
        initialHash: blobs.initialHash,
        parts: { id: "h", count: 2, bytes: text.length, sha256: "0".repeat(64) },
      },
      "hz",
    );
    await live.synced();
    expect(live.state.count).toBe(1); // passed over: it read every entry since the base
    await log.truncateBefore(first);
    const errors: StateSyncError[] = [];
    const fresh = createSynchronizer({
      log: new JetStreamLog({ connection: nc, stream }),
      model: blobs,
      snapshots: false,
      compaction: false,
      onError: (e) => errors.push(e),
    });
    expect(await codeOf(fresh)).toBe("TRUNCATED");
    expect(errors[0]).toMatchObject({ code: "CORRUPT_ENTRY" });
    expect(errors[0]!.message).toMatch(/sha256/);
    await live.update("increment", {}); // the live replica still writes
    expect(live.state.count).toBe(2);
    await Promise.all([live.close(), log.close()]);
    await nc.close();
  });
});
