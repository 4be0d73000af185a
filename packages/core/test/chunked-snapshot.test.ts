import { describe, expect, it } from "vitest";
import {
  createSynchronizer,
  decodeEntry,
  MemoryLog,
  MemorySnapshotStore,
  stateHash,
  type Entry,
  type StateSyncError,
} from "@statesync/core";
import { codeOf, counterModel, open } from "./fixtures.js";

/** A log whose entries hold at most 4 KiB, so a state of some 40 KB needs a chunked snapshot. */
const smallLog = () => new MemoryLog({ maxEntryBytes: 4096 });
const noAuto = { compaction: false } as const;

async function kinds(log: MemoryLog): Promise<string[]> {
  const out: string[] = [];
  for await (const e of log.read(1, (await log.info()).latestRevision)) {
    const d = decodeEntry(e.data);
    out.push(
      d.ok ? (d.entry.kind === "snapshot" && "parts" in d.entry ? "chunked" : d.entry.kind) : "bad",
    );
  }
  return out;
}

async function entries(log: MemoryLog): Promise<Array<{ revision: number; entry: Entry }>> {
  const out: Array<{ revision: number; entry: Entry }> = [];
  for await (const e of log.read(1, (await log.info()).latestRevision)) {
    const d = decodeEntry(e.data);
    if (d.ok) out.push({ revision: e.revision, entry: d.entry });
  }
  return out;
}

/** ~40 KB of items, with text that JSON escapes and characters outside the BMP. */
async function fill(sync: Awaited<ReturnType<typeof open>>, n = 80): Promise<void> {
  for (let i = 0; i < n; i++) {
    await sync.updateUnconditionally("push", { item: `${i} "q" \\ é 😀 ${"x".repeat(400)}` });
  }
}

describe("chunked snapshots on MemoryLog", () => {
  it("writes parts then a format-2 snapshot entry, truncates before part 0, and a fresh replica loads it", async () => {
    const log = smallLog();
    const a = await open(log, noAuto);
    await fill(a);
    const before = (await log.info()).latestRevision;
    const { revision } = await a.compact();
    const ks = await kinds(log);
    expect(ks[0]).toBe("part");
    expect(ks.at(-1)).toBe("chunked");
    expect(ks.filter((k) => k === "part").length).toBeGreaterThan(5);
    const all = await entries(log);
    expect(all[0]!.revision).toBe(before + 1); // part 0 right after the captured revision
    expect(all.at(-1)!.revision).toBe(revision);
    const z = all.at(-1)!.entry;
    expect(z.v).toBe(2);
    const b = await open(log, noAuto);
    expect(b.revision).toBe(revision);
    expect(stateHash(b.state)).toBe(stateHash(a.state));
    expect(b.errors).toEqual([]);
    expect(await b.stateAt(revision)).toEqual(a.state);
    const history = await b.history();
    expect(history[0]!.kind).toBe("part");
    expect(history.at(-1)!.kind).toBe("snapshot");
    // Writes go on from there, and a second compaction truncates the first one away.
    await b.update("increment", { by: 2 });
    await a.waitFor(b.revision);
    await fill(a, 3);
    await a.compact();
    const c = await open(log, noAuto);
    expect(stateHash(c.state)).toBe(stateHash(a.state));
    expect(c.state.count).toBe(2);
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  it("completes under concurrent writers: their entries between the parts are replayed onto the state", async () => {
    const log = smallLog();
    const a = await open(log, noAuto);
    const w = await open(log.handle(), noAuto);
    await fill(a);
    await w.synced();
    await a.compact(); // finds the state too large for one entry; the next starts with part 0
    await fill(a, 4);
    log.setAppendDelay(2);
    const compacting = a.compact();
    while (!(await kinds(log)).slice(-3).includes("part"))
      await new Promise((r) => setTimeout(r, 1));
    // Part 0 is in: these land between the parts.
    const writes = (async () => {
      for (let i = 0; i < 30; i++) await w.updateUnconditionally("increment", { by: 1 });
    })();
    const conditional = (async () => {
      for (let i = 0; i < 5; i++) await w.update("increment", { by: 10 });
    })();
    await Promise.all([compacting, writes, conditional]);
    log.setAppendDelay(0);
    const ks = await kinds(log);
    const first = ks.indexOf("part");
    const last = ks.lastIndexOf("chunked");
    expect(first).toBe(0);
    // Other writers' entries landed between part 0 and the snapshot entry.
    expect(ks.slice(first, last).some((k) => k === "command" || k === "update")).toBe(true);
    await a.waitFor(w.revision);
    const b = await open(log, noAuto);
    await b.waitFor(w.revision);
    expect(b.state.count).toBe(80);
    expect(stateHash(b.state)).toBe(stateHash(w.state));
    expect(stateHash(a.state)).toBe(stateHash(w.state));
    expect(b.errors).toEqual([]);
    await Promise.all([a.close(), w.close(), b.close()]);
  });

  it("stays safe with concurrent compactors", async () => {
    const log = smallLog();
    const clients = await Promise.all([open(log, noAuto), open(log, noAuto), open(log, noAuto)]);
    await fill(clients[0]!);
    await Promise.all(clients.map((c) => c.synced()));
    await Promise.all(clients.map((c) => c.compact()));
    await fill(clients[1]!, 3);
    await Promise.all(clients.map((c) => c.synced()));
    await Promise.all([
      ...clients.map((c) => c.compact()),
      clients[2]!.updateUnconditionally("increment", { by: 1 }),
    ]);
    await Promise.all(clients.map((c) => c.synced()));
    const fresh = await open(log, noAuto);
    expect(fresh.revision).toBe(clients[0]!.revision);
    for (const c of clients) expect(stateHash(c.state)).toBe(stateHash(fresh.state));
    expect(fresh.state.count).toBe(1);
    await Promise.all([...clients, fresh].map((c) => c.close()));
  });

  it("lets a replica whose position was truncated away recover from the chunked snapshot", async () => {
    const log = smallLog();
    const store = new MemorySnapshotStore();
    const away = await open(log, { ...noAuto, snapshots: store, live: false });
    const a = await open(log, noAuto);
    await fill(a, 10);
    await away.fetchUpdates();
    await away.close();
    await fill(a, 70);
    await a.compact();
    await a.update("increment", { by: 1 });
    const back = await open(log, { ...noAuto, snapshots: store });
    expect(back.stats.snapshotsRestored).toBe(1);
    expect(back.revision).toBe(a.revision);
    expect(stateHash(back.state)).toBe(stateHash(a.state));
    expect(back.status).toBe("live");
    await Promise.all([a.close(), back.close()]);
  });

  it("a live follower passes over parts and the snapshot entry without loading them", async () => {
    const log = smallLog();
    const a = await open(log, noAuto);
    const f = await open(log.handle(), noAuto);
    await fill(a);
    await a.compact();
    await f.waitFor(a.revision);
    expect(stateHash(f.state)).toBe(stateHash(a.state));
    // Its own compaction finds the snapshot entry at the tail and only truncates before part 0.
    const truncations = log.truncations;
    expect((await f.compact()).revision).toBe(a.revision);
    expect(log.truncations).toBe(truncations + 1);
    expect((await kinds(log))[0]).toBe("part");
    await Promise.all([a.close(), f.close()]);
  });

  it("never uses a partial chunked snapshot, and it never blocks the next compaction", async () => {
    const log = smallLog();
    const a = await open(log, noAuto);
    await fill(a);
    // A compactor that died after two parts: part 0 (conditional on the tail) and part 1.
    await a.synced();
    const base = a.revision;
    const part = (index: number, data: string) =>
      JSON.stringify({ v: 1, kind: "part", ts: 1, client: "dead", id: "dead", index, base, data });
    log.injectRaw(part(0, ""));
    log.injectRaw(part(1, '{"count":99'));
    await a.fetchUpdates();
    expect(a.revision).toBe(base + 2);
    await a.update("increment", { by: 1 });
    log.failNextTruncations(1); // keeps the dead parts ahead of the next snapshot's
    expect(await codeOf(a.compact())).toBe("UNAVAILABLE");
    await log.truncateBefore(base + 1); // the log starts with the dead parts
    expect((await kinds(log)).slice(0, 3)).toEqual(["part", "part", "update"]);
    const b = await open(log, noAuto);
    expect(b.state.count).toBe(1);
    expect(stateHash(b.state)).toBe(stateHash(a.state));
    expect(b.errors).toEqual([]);
    await a.update("increment", { by: 1 });
    await a.compact();
    const c = await open(log, noAuto);
    expect(c.state.count).toBe(2);
    await Promise.all([a.close(), b.close(), c.close()]);
  });
});

describe("hostile chunked snapshots", () => {
  const HASH = "0".repeat(64);
  /** A log holding only a chunked snapshot made of `parts` with the snapshot entry's `declared`. */
  async function hostile(
    parts: string[],
    declared: { count?: number; bytes?: number; sha256?: string },
  ): Promise<MemoryLog> {
    const source = smallLog();
    const a = await open(source, noAuto);
    const model = (await entries(source))[0]!.entry as Entry & { initialHash: string };
    await a.close();
    const log = smallLog();
    log.injectRaw("{}"); // revision 1, truncated below
    const base = 1;
    parts.forEach((data, index) =>
      log.injectRaw(
        JSON.stringify({ v: 1, kind: "part", ts: 1, client: "h", id: "h", index, base, data }),
      ),
    );
    const text = parts.join("");
    const { sha256 } = await import("@noble/hashes/sha2.js");
    const { bytesToHex } = await import("@noble/hashes/utils.js");
    const bytes = new TextEncoder().encode(text);
    log.injectRaw(
      JSON.stringify({
        v: 2,
        kind: "snapshot",
        base,
        ts: 1,
        client: "h",
        model: "counter",
        version: 1,
        initialHash: model.initialHash,
        parts: {
          id: "h",
          count: declared.count ?? parts.length,
          bytes: declared.bytes ?? bytes.byteLength,
          sha256: declared.sha256 ?? bytesToHex(sha256(bytes)),
        },
      }),
    );
    await log.truncateBefore(2);
    return log;
  }
  const good = ['{"count":5,"items":', '[],"log":[]}'];

  it("an honest chunked snapshot passed over by another replica checks out there: its compact() truncates before it", async () => {
    const log = smallLog();
    const a = await open(log, noAuto);
    const b = await open(log, noAuto);
    await fill(a, 60);
    log.failNextTruncations(1); // A writes the chunked snapshot but does not truncate
    expect(await codeOf(a.compact())).toBe("UNAVAILABLE");
    await b.synced();
    const firstPart = (await entries(log)).find((e) => e.entry.kind === "part")!.revision;
    expect((await log.info()).firstRevision).toBe(1);
    await b.compact();
    expect(b.errors).toEqual([]);
    expect((await log.info()).firstRevision).toBe(firstPart);
    await Promise.all([a.close(), b.close()]);
  });

  it("a forged chunked snapshot (valid parts of another state) is never truncated to: every replica keeps one state", async () => {
    // Fresh-eyes trial: live replicas passed over it (taking their own state as the one it
    // names), an honest compact() truncated before it, and a replica opened later loaded the
    // forged state: two states at one revision.
    const log = smallLog();
    const a = await open(log, noAuto);
    await fill(a, 10);
    await a.synced();
    const base = a.revision;
    const genesis = (await entries(log))[0]!.entry as Entry & { initialHash: string };
    const text = JSON.stringify({ count: 999, items: ["FORGED"], log: [] });
    const bytes = new TextEncoder().encode(text);
    const { createHash } = await import("node:crypto");
    const part = (index: number, data: string) =>
      JSON.stringify({ v: 1, kind: "part", ts: 1, client: "x", id: "forged", index, base, data });
    log.injectRaw(part(0, ""));
    log.injectRaw(part(1, text));
    log.injectRaw(
      JSON.stringify({
        v: 2,
        kind: "snapshot",
        base,
        ts: 1,
        client: "x",
        model: "counter",
        version: 1,
        initialHash: genesis.initialHash,
        parts: {
          id: "forged",
          count: 2,
          bytes: bytes.byteLength,
          sha256: createHash("sha256").update(bytes).digest("hex"),
        },
      }),
    );
    await a.fetchUpdates();
    expect(a.state.count).toBe(0); // passed over: the state here is not the forged one
    await a.compact().catch(() => undefined);
    expect(a.errors.map((e) => e.code)).toContain("CORRUPT_ENTRY");
    const b = await open(log, noAuto);
    expect(b.revision).toBe(a.revision);
    expect(stateHash(b.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), b.close()]);
  });

  it("loads a well-formed one (the control)", async () => {
    const b = await open(await hostile(good, {}), noAuto);
    expect(b.state.count).toBe(5);
    await b.close();
  });

  it.each([
    ["a wrong sha256", { sha256: HASH }, /sha256/],
    ["a wrong byte count", { bytes: 5 }, /bytes/],
    ["a missing part", { count: 3 }, /2 of its 3 parts/],
  ])("refuses %s: CORRUPT_ENTRY, then TRUNCATED (no usable start)", async (_, declared, why) => {
    const log = await hostile(good, declared);
    const errors: StateSyncError[] = [];
    const opening = createSynchronizer({
      log,
      model: counterModel,
      compaction: false,
      onError: (e) => errors.push(e),
    });
    expect(await codeOf(opening)).toBe("TRUNCATED");
    expect(errors.map((e) => e.code)).toEqual(["CORRUPT_ENTRY", "TRUNCATED"]);
    expect(errors[0]!.message).toMatch(why);
  });

  it("refuses parts whose state fails the schema, or is nested too deep", async () => {
    for (const parts of [
      ['{"count":"x","items":[],"log":[]}'],
      ["[".repeat(300) + "]".repeat(300)],
    ]) {
      expect(await codeOf(open(await hostile(parts, {}), noAuto))).toBe("TRUNCATED");
    }
  });

  it("refuses huge counts and sizes in the envelope (CORRUPT_ENTRY)", () => {
    const z = (parts: object) =>
      new TextEncoder().encode(
        JSON.stringify({
          v: 2,
          kind: "snapshot",
          base: 1,
          ts: 1,
          client: "h",
          model: "counter",
          version: 1,
          initialHash: HASH,
          parts,
        }),
      );
    const ok = { id: "h", count: 2, bytes: 10, sha256: HASH };
    expect(decodeEntry(z(ok)).ok).toBe(true);
    for (const bad of [
      { ...ok, count: 1e9 },
      { ...ok, bytes: 2 ** 40 },
      { ...ok, count: 0 },
      { ...ok, id: "../x" },
      { ...ok, sha256: "xyz" },
    ]) {
      const d = decodeEntry(z(bad));
      expect(d.ok ? "ok" : d.error.code).toBe("CORRUPT_ENTRY");
    }
  });

  it("a live replica is not moved by hostile parts and snapshot entries", async () => {
    const log = smallLog();
    const a = await open(log, noAuto);
    await a.update("increment", { by: 3 });
    const base = a.revision;
    log.injectRaw(
      JSON.stringify({ v: 1, kind: "part", ts: 1, client: "h", id: "h", index: 0, base, data: "" }),
    );
    log.injectRaw(
      JSON.stringify({
        v: 2,
        kind: "snapshot",
        base,
        ts: 1,
        client: "h",
        model: "counter",
        version: 1,
        initialHash: (await entries(log))[0]!.entry.kind === "genesis" ? a.model.initialHash : "",
        parts: { id: "h", count: 1, bytes: 1, sha256: HASH },
      }),
    );
    await a.fetchUpdates();
    expect(a.state.count).toBe(3);
    await a.update("increment", { by: 1 });
    expect(a.state.count).toBe(4);
    await a.close();
  });
});
