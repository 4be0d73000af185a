import { describe, expect, it } from "vitest";
import { MemoryLog, MemorySnapshotStore, stateHash } from "@statesync/core";
import { codeOf, open, until } from "./fixtures.js";

const noAuto = { compaction: false } as const;

describe("compaction on MemoryLog", () => {
  it("writes a snapshot entry, truncates before it, and a fresh client starts there", async () => {
    const log = new MemoryLog();
    const a = await open(log, noAuto);
    for (let i = 0; i < 30; i++) await a.update("increment", { by: 1 });
    const { revision } = await a.compact();
    expect(revision).toBe(32);
    expect((await log.info()).firstRevision).toBe(32);
    expect(log.size).toBe(1);
    await a.update("increment", { by: 1 });
    const b = await open(log, noAuto);
    expect(b.stats.entriesFetched).toBe(2);
    expect(b.state.count).toBe(31);
    expect(stateHash(b.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), b.close()]);
  });

  it("lets a client whose position was truncated away recover from the snapshot entry", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const away = await open(log, { ...noAuto, snapshots: store, live: false });
    const a = await open(log, noAuto);
    for (let i = 0; i < 10; i++) await a.update("increment", { by: 1 });
    await away.fetchUpdates();
    await away.close(); // snapshot at 11
    for (let i = 0; i < 10; i++) await a.update("increment", { by: 1 });
    await a.compact();
    await a.update("increment", { by: 1 });
    const back = await open(log, { ...noAuto, snapshots: store });
    expect(back.stats.snapshotsRestored).toBe(1);
    expect(back.stats.entriesFetched).toBe(2); // the snapshot entry and the one after it
    expect(back.state.count).toBe(21);
    expect(back.status).toBe("live");
    await Promise.all([a.close(), back.close()]);
  });

  it("lets a live replica that fell behind jump onto the snapshot entry", async () => {
    const log = new MemoryLog();
    const slow = await open(log, { ...noAuto, live: false });
    const a = await open(log, noAuto);
    for (let i = 0; i < 5; i++) await a.update("increment", { by: 2 });
    await a.compact();
    expect(await slow.fetchUpdates()).toBe(a.revision);
    expect(slow.state.count).toBe(10);
    await Promise.all([a.close(), slow.close()]);
  });

  it("loses nothing when it crashes between the snapshot entry and the truncation", async () => {
    const log = new MemoryLog();
    const a = await open(log, noAuto);
    for (let i = 0; i < 5; i++) await a.update("increment", { by: 1 });
    log.failNextTruncations(1);
    expect(await codeOf(a.compact())).toBe("UNAVAILABLE");
    expect(log.size).toBe(7); // genesis, 5 updates, the snapshot entry
    const b = await open(log, noAuto);
    expect(b.state.count).toBe(5);
    const again = await b.compact(); // the tail is a snapshot entry: only truncates
    expect(again.revision).toBe(7);
    expect(log.size).toBe(1);
    await Promise.all([a.close(), b.close()]);
  });

  it("survives concurrent compactions by several clients", async () => {
    const log = new MemoryLog();
    const clients = await Promise.all([open(log, noAuto), open(log, noAuto), open(log, noAuto)]);
    for (let i = 0; i < 9; i++) await clients[i % 3]!.update("increment", { by: 1 });
    await Promise.all(clients.map((c) => c.synced()));
    const results = await Promise.all([
      ...clients.map((c) => c.compact()),
      clients[0]!.update("increment", { by: 1 }),
      clients[1]!.updateUnconditionally("increment", { by: 1 }),
    ]);
    expect(results.length).toBe(5);
    await Promise.all(clients.map((c) => c.synced()));
    for (const c of clients) expect(c.state.count).toBe(11);
    const fresh = await open(log, noAuto);
    expect(fresh.state.count).toBe(11);
    expect(new Set([...clients, fresh].map((c) => stateHash(c.state))).size).toBe(1);
    await Promise.all([...clients, fresh].map((c) => c.close()));
  });

  it("writes a state larger than one entry as a chunked snapshot (chunked-snapshot.test.ts has the rest)", async () => {
    const log = new MemoryLog({ maxEntryBytes: 4_000 });
    const a = await open(log, noAuto);
    for (let i = 0; i < 10; i++) await a.update((d) => void d.items.push("x".repeat(500)));
    const { revision } = await a.compact();
    expect(log.size).toBeGreaterThan(2); // part 0, the parts of the text, the snapshot entry
    expect(log.truncations).toBe(1);
    const fresh = await open(log, noAuto);
    expect(fresh.revision).toBe(revision);
    expect(stateHash(fresh.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), fresh.close()]);
  });

  it("compacts automatically after so many entries, and replicas keep converging", async () => {
    const log = new MemoryLog();
    const opts = { compaction: { everyEntries: 20, jitter: 0.5 } };
    const a = await open(log, opts);
    const b = await open(log, opts);
    for (let i = 0; i < 100; i++) await (i % 2 ? a : b).update("increment", { by: 1 });
    await until(() => a.stats.compactions + b.stats.compactions >= 3);
    expect(log.size).toBeLessThan(40);
    await Promise.all([a.synced(), b.synced()]);
    const fresh = await open(log, opts);
    expect(fresh.state.count).toBe(100);
    expect(stateHash(a.state)).toBe(stateHash(b.state));
    await Promise.all([a.close(), b.close(), fresh.close()]);
  });

  it("reports one warning and backs off when it may not truncate", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: { everyEntries: 5, jitter: 0 } });
    log.failNextTruncations(1000, "PERMISSION_DENIED");
    for (let i = 0; i < 200; i++) await a.update("increment", { by: 1 });
    await until(() => log.truncations >= 1);
    await new Promise((r) => setTimeout(r, 20));
    expect(a.errors.filter((e) => e.code === "PERMISSION_DENIED")).toHaveLength(1);
    expect(log.truncations).toBeLessThanOrEqual(2);
    expect(a.state.count).toBe(200);
    await a.close();
  });
});

describe("compaction meets a lost acknowledgement", () => {
  for (const duplicateCheck of ["dedupe-first", "expected-first"] as const) {
    it(`does not apply an update twice when its position was truncated before the re-send (${duplicateCheck})`, async () => {
      const log = new MemoryLog({ duplicateCheck });
      const a = await open(log, { ...noAuto, clientId: "a" });
      const b = await open(log, noAuto);
      const p = a.update("increment", { by: 1 });
      log.loseNextAcks(1);
      await until(() => log.size === 2); // stored, acknowledgement lost, re-send pending
      await b.waitFor(2);
      await b.compact(); // truncates the entry a is about to look up
      expect(log.size).toBe(1);
      const r = await p;
      expect(r.attempts).toBe(1);
      await Promise.all([a.synced(), b.synced()]);
      expect(a.state.count).toBe(1);
      expect(b.state.count).toBe(1);
      await Promise.all([a.close(), b.close()]);
    });
  }
});

describe("history and stateAt", () => {
  it("lists retained entries and rebuilds the state at a retained revision", async () => {
    const log = new MemoryLog();
    const a = await open(log, { ...noAuto, clientId: "alice" });
    await a.update("increment", { by: 2 });
    await a.updateUnconditionally("push", { item: "p" });
    await a.update((d) => void (d.count = 10));
    await a.synced();
    const h = await a.history();
    expect(h.map((e) => e.kind)).toEqual(["genesis", "update", "command", "update"]);
    expect(h[1]).toMatchObject({
      revision: 2,
      command: "increment",
      args: { by: 2 },
      clientId: "alice",
    });
    expect(h[2]).toMatchObject({ revision: 3, command: "push", args: { item: "p" } });
    expect(h[3]!.command).toBeUndefined();
    expect((await a.history({ from: 2, to: 3 })).map((e) => e.revision)).toEqual([2, 3]);
    expect(await a.stateAt(0)).toEqual({ count: 0, items: [], log: [] });
    expect(await a.stateAt(1)).toEqual({ count: 0, items: [], log: [] });
    expect((await a.stateAt(2)).count).toBe(2);
    expect((await a.stateAt(3)).items).toEqual(["p@2"]);
    expect(await a.stateAt(4)).toEqual(a.state);
    await a.compact();
    await a.update("increment", { by: 1 });
    expect(await codeOf(a.stateAt(2))).toBe("TRUNCATED");
    // Revision 0 is the initial state, which no truncation removes.
    expect(await a.stateAt(0)).toEqual({ count: 0, items: [], log: [] });
    expect((await a.stateAt(a.revision)).count).toBe(11);
    expect(await codeOf(a.stateAt(999))).toBe("VALIDATION");
    expect(await codeOf(a.history({ from: -1 }))).toBe("VALIDATION");
    await a.close();
  });
});
