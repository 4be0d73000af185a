import { describe, expect, it } from "vitest";
import { decodeEntry } from "../src/entry.js";
import { MemoryLog } from "../src/memory-log.js";
import { createSynchronizer } from "../src/synchronizer.js";
import { codeOf, counterModel, until } from "./fixtures.js";

/**
 * A whole log purged by an operator under a replica that stays live (fresh-eyes trial, stop 25):
 * the replica was never told; its next update landed on the emptied log, and every fresh
 * replica's opening failed `TRUNCATED` until some compaction. A replica that compacts now sees,
 * at its configuration check, that the log no longer starts where it did, and writes its state
 * back (`writeBackWhenPurged`, engine/log-changes.ts).
 */
const open = (log: MemoryLog, extra: { compaction?: false; live?: boolean } = {}) =>
  createSynchronizer({ log, model: counterModel, streamCheckIntervalMs: 50, ...extra });

async function firstKind(log: MemoryLog): Promise<string | undefined> {
  const info = await log.info();
  const entry = await log.entryAt(info.firstRevision);
  const decoded = entry && decodeEntry(entry.data);
  return decoded?.ok ? decoded.entry.kind : undefined;
}

describe("a whole log purged under a live replica", () => {
  it("the replica writes its state back; a fresh replica opens on it", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    await log.truncateBefore(a.revision + 1); // the operator's purge: nothing retained
    await a.update("increment", { by: 10 }); // lands on the emptied log
    // Until the write-back, the log holds no start (what fresh replicas met for good before).
    await until(() => a.stats.compactions === 1, 10_000);
    expect(await firstKind(log)).toBe("snapshot");
    const c = await open(log, { compaction: false });
    expect(c.state.count).toBe(13);
    expect(c.revision).toBe(a.revision);
    await Promise.all([a.close(), c.close()]);
  });

  it("a replica with compaction: false writes nothing back (another must: docs/guarantees.md)", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    await a.update("increment", { by: 1 });
    await log.truncateBefore(a.revision + 1);
    await a.update("increment", { by: 1 });
    await new Promise((r) => setTimeout(r, 1_500)); // a dozen checks at least
    expect(a.stats.compactions).toBe(0);
    expect(await firstKind(log)).toBe("update");
    const opening = open(log, { compaction: false });
    expect(await codeOf(opening)).toBe("TRUNCATED");
    // It says why, and the way out (a trial saw only "no longer holds the entries").
    await expect(opening).rejects.toThrow(
      /^the log no longer holds the entries before revision \d+ \(purged or deleted\), and holds no genesis or snapshot entry to start from up to revision \d+; a replica that still holds the state writes it back \(compact\(\)/,
    );
    await a.close();
  });

  it("a compaction this replica has not read yet is no purge: nothing is written back", async () => {
    const log = new MemoryLog();
    // Not live: it reads nothing until asked, so its checks see a log that starts past it.
    const a = await open(log, { live: false });
    const b = await open(log, { compaction: false });
    await b.update("increment", { by: 1 });
    await b.compact(); // a snapshot entry, the history before it truncated
    const latest = (await log.info()).latestRevision;
    await new Promise((r) => setTimeout(r, 1_000)); // a dozen checks of a's at least
    expect(await firstKind(log)).toBe("snapshot");
    expect((await log.info()).latestRevision).toBe(latest); // no second snapshot entry
    expect(a.stats.compactions).toBe(0);
    await Promise.all([a.close(), b.close()]);
  });

  it("a fresh replica that opens the emptied log first does not reset the state (stop 25's trial)", async () => {
    const log = new MemoryLog();
    // Checks far apart: the fresh replica opens before the live one's check sees the purge.
    const a = await createSynchronizer({
      log,
      model: counterModel,
      streamCheckIntervalMs: 600_000,
    });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 2 });
    const events: string[] = [];
    a.on("error", (e) => events.push(`${e.code} ${String(e.details.held)}`));
    await log.truncateBefore(a.revision + 1); // the operator's purge: nothing retained
    const b = await open(log, { compaction: false }); // no state: re-anchors the emptied log
    await until(() => b.state.count === 6 && a.state.count === 6 && a.revision === b.revision);
    expect(events).toContain("TRUNCATED true");
    // Every replica opening now reads the state written back, and writes go on from it.
    await b.update("increment", { by: 1 });
    const c = await open(log, { compaction: false });
    expect(c.state.count).toBe(7);
    await until(() => a.state.count === 7);
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  it("a write on the reset state that lands first stands: reported, no divergence", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    await a.update("increment", { by: 5 });
    await log.truncateBefore(a.revision + 1);
    const b = await open(log, { compaction: false });
    await b.update("increment", { by: 1 }); // made on the reset state, before a reads on
    const events: Array<Record<string, unknown>> = [];
    a.on("error", (e) => events.push(e.details));
    await a.fetchUpdates();
    await until(() => events.some((d) => d.kept === false));
    await b.fetchUpdates();
    expect(a.state.count).toBe(1);
    expect(b.state.count).toBe(1);
    expect(a.revision).toBe(b.revision);
    await Promise.all([a.close(), b.close()]);
  });
});
