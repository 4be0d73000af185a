import { describe, expect, it } from "vitest";
import { decodeEntry, MemoryLog, MemorySnapshotStore, stateHash } from "@statesync/core";
import { open } from "./fixtures.js";

/**
 * A fresh replica whose log's retained history starts with entries it cannot start from (a
 * compaction's truncation that a server killed right after undid in part: a trial on nats-server
 * 2.10.27, 5 of 5 runs) reads past them to the starting point after them, a one-message or a
 * chunked snapshot. Before, it stopped TRUNCATED at the first, and no new replica could open
 * until the next compaction. With no starting point after them, it still stops TRUNCATED and
 * writes nothing (the log is not started again from the initial state).
 */
const noAuto = { compaction: false } as const;

/** Revisions and kinds of the entries `log` retains ("chunked" for a chunked snapshot entry). */
async function kinds(log: MemoryLog): Promise<Array<[number, string, number?]>> {
  const out: Array<[number, string, number?]> = [];
  for await (const e of log.read(1, (await log.info()).latestRevision)) {
    const d = decodeEntry(e.data);
    const k = d.ok ? d.entry : undefined;
    if (k?.kind === "part") out.push([e.revision, "part", k.index]);
    else
      out.push([
        e.revision,
        k?.kind === "snapshot" && "parts" in k ? "chunked" : (k?.kind ?? "bad"),
      ]);
  }
  return out;
}

/** Compacts, its truncation failing (so the history before it stays, as after an undone purge). */
async function compactKeepingHistory(
  log: MemoryLog,
  sync: Awaited<ReturnType<typeof open>>,
): Promise<void> {
  log.failNextTruncations(1);
  await sync.compact().catch(() => undefined);
}

describe("a log that starts inside what a compaction truncated", () => {
  it("a fresh replica reads past plain entries to a snapshot entry after them", async () => {
    const log = new MemoryLog();
    const a = await open(log, noAuto);
    for (let i = 0; i < 6; i++) await a.update("increment", { by: 1 });
    await compactKeepingHistory(log, a);
    await a.update("increment", { by: 10 });
    const all = await kinds(log);
    const snapshotAt = all.find(([, k]) => k === "snapshot")![0];
    await log.truncateBefore(snapshotAt - 3); // three plain entries, then the snapshot entry
    expect((await kinds(log))[0]![1]).toBe("update");
    const b = await open(log, noAuto);
    expect(b.status).toBe("live");
    expect(b.revision).toBe(a.revision);
    expect(b.state).toEqual(a.state);
    await b.update("increment", { by: 1 });
    await a.waitFor(b.revision);
    expect(a.state.count).toBe(17);
    await Promise.all([a.close(), b.close()]);
  });

  it("a fresh replica reads past an older chunked snapshot's last parts to a complete one", async () => {
    const log = new MemoryLog({ maxEntryBytes: 4096 });
    const a = await open(log, noAuto);
    for (let i = 0; i < 60; i++)
      await a.updateUnconditionally("push", { item: `${i} ${"x".repeat(400)}` });
    await compactKeepingHistory(log, a); // X: several parts
    await a.update("increment", { by: 1 });
    await compactKeepingHistory(log, a); // Y
    await a.update("increment", { by: 1 });
    const all = await kinds(log);
    const firstPart1 = all.find(([, k, i]) => k === "part" && i === 1)![0];
    await log.truncateBefore(firstPart1); // X's part 0 is gone, its other parts are not
    const retained = await kinds(log);
    expect(retained[0]).toEqual([firstPart1, "part", 1]);
    expect(retained.filter(([, k]) => k === "chunked").length).toBe(2);
    const b = await open(log, noAuto);
    expect(b.status).toBe("live");
    expect(b.revision).toBe(a.revision);
    expect(stateHash(b.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), b.close()]);
  });

  it("a replica whose local snapshot is older than the cut reads past the gap too (a review)", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const a = await open(log, noAuto);
    await a.update("increment", { by: 1 });
    await (await open(log, { ...noAuto, snapshots: store })).close(); // its snapshot: revision 2
    for (let i = 0; i < 6; i++) await a.update("increment", { by: 1 });
    await compactKeepingHistory(log, a);
    await a.update("increment", { by: 10 });
    const snapshotAt = (await kinds(log)).find(([, k]) => k === "snapshot")![0];
    await log.truncateBefore(snapshotAt - 3); // plain entries past its snapshot, then the snapshot
    const again = await open(log, { ...noAuto, snapshots: store });
    expect(again.status).toBe("live");
    expect(again.state).toEqual(a.state);
    // stateAt answers the revisions from the starting point on, as the replica stands on them.
    expect(await again.stateAt(again.revision)).toEqual(again.state);
    await expect(again.stateAt(snapshotAt - 1)).rejects.toMatchObject({ code: "TRUNCATED" });
    await Promise.all([a.close(), again.close()]);
  });

  it("with no starting point after them: TRUNCATED, and nothing written", async () => {
    const log = new MemoryLog();
    const a = await open(log, noAuto);
    for (let i = 0; i < 6; i++) await a.update("increment", { by: 1 });
    await a.close();
    await log.truncateBefore(4);
    const before = await kinds(log);
    await expect(open(log, noAuto)).rejects.toMatchObject({
      code: "TRUNCATED",
      details: { next: 4 },
    });
    expect(await kinds(log)).toEqual(before);
  });
});
