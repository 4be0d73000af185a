import {
  createSynchronizer,
  decodeEntry,
  encodeEntry,
  MAX_ORIGINS,
  MemoryLog,
  MemoryPendingStore,
  MemorySnapshotStore,
  type PendingQueue,
  type PendingStore,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { until } from "../fixtures.js";
import { board, entries, injectCommand, openQueued } from "./fixtures.js";

/** A store over `memory` whose deletes never finish: a crash right after the append. */
function hangingDeletes(memory: MemoryPendingStore): PendingStore {
  return {
    async open(key, owner) {
      const q = await memory.open(key, owner);
      return Object.assign(Object.create(q) as PendingQueue, {
        delete: () => new Promise<void>(() => undefined),
        close: () => q.close(),
      });
    },
  };
}

async function originEntries(log: MemoryLog) {
  return (await entries(log)).filter((e) => e.origin !== undefined);
}

describe("exactly once across crashes (origin, seq)", () => {
  it.each(["update", "command"] as const)(
    "a crash between the append of a queued %s and its removal: the restart drops it, counted once",
    async (kind) => {
      const log = new MemoryLog();
      const memory = new MemoryPendingStore();
      const a = await openQueued(log, hangingDeletes(memory));
      const p =
        kind === "update"
          ? a.update("add", { card: "x" })
          : a.updateUnconditionally("add", { card: "x" });
      p.catch(() => undefined);
      await p.queued;
      await until(() => a.state.cards.length === 1); // appended; the removal never finishes
      // The process dies: A is dropped without close(); its lock dies with it.
      const b = await openQueued(log.handle(), memory.crashed());
      await b.flush();
      expect(b.pendingCount).toBe(0);
      expect(b.state.cards).toEqual(["x"]);
      expect(await originEntries(log)).toHaveLength(1);
      const c = await openQueued(log.handle(), memory.crashed(), { owner: "reader" });
      expect(c.state.cards).toEqual(["x"]);
      await Promise.all([b.close(), c.close()]);
    },
  );

  it("every replica skips a re-sent (origin, seq), also after a compaction and from a local snapshot", async () => {
    const log = new MemoryLog();
    const snapshots = new MemorySnapshotStore();
    const a = await openQueued(log);
    await a.update("add", { card: "x" });
    await a.updateUnconditionally("bump", {});
    const [first, second] = await originEntries(log);
    const origin = first!.origin![0];
    const resend = (seq: number, name: string, args: unknown) =>
      log.injectRaw(
        encodeEntry({
          v: 2,
          kind: "command",
          ts: Date.now(),
          client: "crashed",
          seed: 1,
          name,
          args,
          origin: [origin, seq],
        }),
      );
    resend(second!.origin![1], "bump", {});
    resend(first!.origin![1], "add", { card: "x" });
    const reader = await createSynchronizer({ log: log.handle(), model: board, snapshots });
    expect(reader.state).toEqual({ cards: ["x"], n: 1 });
    await reader.saveSnapshot();
    await reader.close();
    await a.waitFor((await log.info()).latestRevision);
    expect(a.state).toEqual({ cards: ["x"], n: 1 });
    await a.compact();
    resend(second!.origin![1], "bump", {});
    const fresh = await createSynchronizer({ log: log.handle(), model: board });
    expect(fresh.state).toEqual({ cards: ["x"], n: 1 });
    const restored = await createSynchronizer({ log: log.handle(), model: board, snapshots });
    expect(restored.stats.snapshotsRestored).toBe(1);
    expect(restored.state).toEqual({ cards: ["x"], n: 1 });
    // A new seq of the same origin still applies.
    resend(second!.origin![1] + 1, "bump", {});
    await fresh.waitFor((await log.info()).latestRevision);
    expect(fresh.state.n).toBe(2);
    await Promise.all([a.close(), fresh.close(), restored.close()]);
  });

  it("a chunked snapshot carries the table of applied origins: a fresh replica skips a re-send after it", async () => {
    // Entries of at most 2 KiB: the board's ~20 KB state compacts as parts and a chunked entry.
    const log = new MemoryLog({ maxEntryBytes: 2048 });
    const a = await openQueued(log);
    for (let i = 0; i < 40; i++) await a.update("add", { card: `${i}-${"c".repeat(500)}` });
    await a.updateUnconditionally("bump", {});
    const sent = (await originEntries(log)).at(-1)!;
    await a.compact();
    let origins: unknown;
    for await (const e of log.read(1, (await log.info()).latestRevision)) {
      const d = decodeEntry(e.data);
      if (d.ok && d.entry.kind === "snapshot" && "parts" in d.entry) origins = d.entry.origins;
    }
    // The case under test is a chunked snapshot (not a one-message one), carrying the table.
    expect(origins).toEqual([[sent.origin![0], sent.origin![1], expect.any(Number)]]);
    log.injectRaw(
      encodeEntry({
        v: 2,
        kind: "command",
        ts: Date.now(),
        client: "crashed",
        seed: 1,
        name: "bump",
        args: {},
        origin: sent.origin!,
      }),
    );
    const fresh = await createSynchronizer({ log: log.handle(), model: board });
    expect(fresh.state.n).toBe(1);
    expect(fresh.state.cards).toHaveLength(40);
    await Promise.all([a.close(), fresh.close()]);
  });

  it("a week offline: past the 4,000 recent message ids and a compaction, a crashed queue still counts once", async () => {
    const log = new MemoryLog();
    const memory = new MemoryPendingStore();
    const a = await openQueued(log, hangingDeletes(memory));
    const p = a.update("add", { card: "mine" });
    p.catch(() => undefined);
    await until(() => a.state.cards.length === 1);
    // Another writer goes on for 5,000 entries, then compacts: the entry of ours is gone from
    // the log and from the snapshot entry's recent message ids.
    for (let i = 0; i < 5_000; i++) injectCommand(log, "bump", {});
    const other = await createSynchronizer({ log: log.handle(), model: board, compaction: false });
    await other.compact();
    expect((await originEntries(log)).length).toBe(0);
    const b = await openQueued(log.handle(), memory.crashed());
    await b.flush();
    expect(b.state.cards).toEqual(["mine"]);
    expect(b.state.n).toBe(5_000);
    expect((await originEntries(log)).length).toBe(0); // nothing re-sent
    // And a queue that was offline all that time simply pushes its updates.
    const c = await openQueued(log.handle(), new MemoryPendingStore(), { owner: "laptop" });
    await c.update("add", { card: "late" });
    expect(c.state.cards).toEqual(["mine", "late"]);
    await Promise.all([other.close(), b.close(), c.close()]);
  });

  it("keeps the 2,000 origins applied most recently, the same on every replica (the documented limit)", async () => {
    const log = new MemoryLog();
    const bump = (origin: string, seq = 1) =>
      log.injectRaw(
        encodeEntry({
          v: 2,
          kind: "command",
          ts: 1,
          client: "q",
          seed: 1,
          name: "bump",
          args: {},
          origin: [origin, seq],
        }),
      );
    const a = await createSynchronizer({ log, model: board, compaction: false });
    for (let i = 0; i <= MAX_ORIGINS; i++) bump(`o${i}`); // one more than the table holds
    bump("o1"); // a re-send of a remembered origin: skipped
    bump("o0"); // the least recent one was forgotten: applied again
    await a.waitFor((await log.info()).latestRevision);
    expect(a.state.n).toBe(MAX_ORIGINS + 2);
    await a.compact();
    bump("o2"); // remembered through the snapshot entry's table
    const fresh = await createSynchronizer({ log: log.handle(), model: board });
    expect(fresh.state.n).toBe(MAX_ORIGINS + 2);
    await Promise.all([a.close(), fresh.close()]);
  });

  it("a lost acknowledgement of a queued command is re-sent and still counts once", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    log.loseNextAcks(2);
    await a.updateUnconditionally("bump", {});
    await a.update("add", { card: "after" });
    const reader = await createSynchronizer({ log: log.handle(), model: board });
    expect(reader.state).toEqual({ cards: ["after"], n: 1 });
    await Promise.all([a.close(), reader.close()]);
  });
});
