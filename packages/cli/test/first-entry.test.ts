import {
  createSynchronizer,
  decodeEntry,
  MemoryLog,
  type LogInfo,
  type RevisionedLog,
  type StateSyncError,
} from "@statesync/node";
import { describe, expect, it } from "vitest";
import { ChainCheck } from "../src/chain.js";
import { checkFirstEntry } from "../src/replica.js";
import { counter } from "./helpers.js";

/**
 * The first retained entry is the first one at or after the log's first revision. nats-server
 * 2.9.10 can report, after purges, a `first_seq` it cannot serve (first_seq 37 while a read at 37
 * fails; a fresh-eyes trial): the SDK reads on to the first entry that exists, but the CLI read
 * exactly `first_seq` and called the log corrupt (`CORRUPT_ENTRY`), failing verify, state,
 * export and compact. Simulated here by a memory log whose info names a first revision one before
 * the first entry it holds.
 */
describe("checkFirstEntry", () => {
  /** A compacted memory log (snapshot entry at `snapshot`), and its info as the server had it. */
  async function compacted(): Promise<{ log: RevisionedLog; info: LogInfo; snapshot: number }> {
    const log = new MemoryLog();
    const replica = await createSynchronizer({ log, model: counter, live: false });
    for (let i = 0; i < 4; i++) await replica.update("increment", { by: 1 });
    const { revision: snapshot } = await replica.compact();
    await replica.close();
    const info = await log.info();
    expect(info.firstRevision).toBe(snapshot);
    return { log, info: { ...info, firstRevision: snapshot - 1 }, snapshot };
  }

  it("reads the first entry at or after a first revision the log cannot serve", async () => {
    const { log, info, snapshot } = await compacted();
    expect(await log.entryAt(info.firstRevision)).toBeUndefined();
    await expect(checkFirstEntry(log, info)).resolves.toBeUndefined();
    // The revision it names is that of the entry read: the snapshot entry.
    await expect(checkFirstEntry(log, { ...info, firstRevision: 1 })).resolves.toBeUndefined();
    expect(snapshot).toBeGreaterThan(2);
  });

  it("says the log retains nothing when everything was removed since its info, not malformed", async () => {
    // A new user's trial: `compact` beside replicas compacting in loops once failed
    // "CORRUPT_ENTRY: the first retained entry (revision 493) is malformed" for a sound log: it
    // called an entry it could not read "malformed".
    const { log, snapshot } = await compacted();
    const info = { ...(await log.info()) };
    await log.truncateBefore(info.latestRevision + 1); // the whole stream purged meanwhile
    const error = (await checkFirstEntry(log, info).catch((e: unknown) => e)) as StateSyncError;
    expect(error).toMatchObject({ code: "TRUNCATED", details: { latest: snapshot } });
    expect(error.message).toBe(
      `the log retains no entry: everything up to revision ${snapshot} was removed`,
    );
  });

  it("still refuses a first entry that is no genesis or snapshot entry, naming its revision", async () => {
    const log = new MemoryLog();
    const replica = await createSynchronizer({ log, model: counter, live: false });
    for (let i = 0; i < 4; i++) await replica.update("increment", { by: 1 });
    await replica.close();
    await log.truncateBefore(3); // the genesis and the first update are gone
    const info = { ...(await log.info()), firstRevision: 2 }; // stale, as the server's
    await expect(checkFirstEntry(log, info)).rejects.toMatchObject({
      code: "TRUNCATED", // as an SDK replica opening it says (a trial saw CORRUPT_ENTRY here)
      details: { revision: 3 },
    });
  });

  // Found by a fresh-eyes trial (stop 25): after a whole-stream purge and a live replica's update,
  // `info` predicted that an SDK replica would start the log again from the initial state, while
  // fresh replicas failed TRUNCATED. The prediction is checked against what an opening does.
  it("predicts what an SDK replica opening the log does", async () => {
    const log = new MemoryLog();
    const replica = await createSynchronizer({ log, model: counter, live: false });
    for (let i = 0; i < 4; i++) await replica.update("increment", { by: 1 });
    await replica.close();
    await log.truncateBefore(3); // an update first
    const problem = await checkFirstEntry(log, await log.info()).catch((e: Error) => e.message);
    expect(problem).toMatch(/fails TRUNCATED opening this log/);
    const opening = createSynchronizer({ log, model: counter, live: false, compaction: false });
    await expect(opening).rejects.toMatchObject({ code: "TRUNCATED" });

    const malformed = new MemoryLog();
    await malformed.appendConditional(new TextEncoder().encode("not an entry"), 0, "m-1");
    const unread = await checkFirstEntry(malformed, await malformed.info()).catch(
      (e: Error) => e.message,
    );
    expect(unread).toMatch(/would start it again from the model's initial state/);
    const fresh = await createSynchronizer({ log: malformed, model: counter, live: false });
    expect(fresh.state).toEqual(counter.initial);
    expect(fresh.revision).toBe(2); // the snapshot entry of the initial state, after it
    await fresh.close();
  });

  // A review (stop 36): the SDK now reads past entries it cannot start from to a snapshot entry
  // after them (a purge a server killed right after undid in part), but `checkFirstEntry` (state,
  // export, compact, migrate) and `info`'s chain still called such a log TRUNCATED.
  it("accepts a log whose first retained entries are followed by a snapshot entry, as a replica", async () => {
    const log = new MemoryLog();
    const a = await createSynchronizer({ log, model: counter, compaction: false });
    for (let i = 0; i < 6; i++) await a.update("increment", { by: 1 });
    log.failNextTruncations(1);
    await a.compact().catch(() => undefined);
    await a.update("increment", { by: 10 });
    let snapshot = 0;
    for await (const e of log.read(1, (await log.info()).latestRevision)) {
      const d = decodeEntry(e.data);
      if (d.ok && d.entry.kind === "snapshot") snapshot = e.revision;
    }
    await log.truncateBefore(snapshot - 3);
    const b = await createSynchronizer({ log, model: counter, compaction: false });
    expect(b.state).toEqual(a.state);
    await expect(checkFirstEntry(log, await log.info())).resolves.toBeUndefined();
    const chain = new ChainCheck(true);
    for await (const e of log.read(1, (await log.info()).latestRevision))
      chain.step(e.revision, decodeEntry(e.data));
    chain.end();
    expect(chain.stop).toBeNull();
    // Cut before the snapshot entry's successors too: no start after them, as a replica finds.
    await Promise.all([a.close(), b.close()]);
    const plain = new MemoryLog();
    const c = await createSynchronizer({ log: plain, model: counter, compaction: false });
    for (let i = 0; i < 4; i++) await c.update("increment", { by: 1 });
    await c.close();
    await plain.truncateBefore(3);
    const opening = await createSynchronizer({ log: plain, model: counter, compaction: false })
      .then(() => undefined)
      .catch((e: StateSyncError) => e);
    const cut = new ChainCheck(true);
    for await (const e of plain.read(1, (await plain.info()).latestRevision))
      cut.step(e.revision, decodeEntry(e.data));
    cut.end();
    expect(opening).toMatchObject({ code: "TRUNCATED", details: { revision: 3 } });
    expect(cut.stop).toMatchObject({ revision: 3, code: "TRUNCATED" });
  });

  // A trial: a stream deleted and created again under writers of the old one holds their
  // commands from revision 1 on, no genesis. Nothing was purged; an SDK replica starts it again
  // from the initial state (core `unusable-first-entry.test.ts`), and `info` said "purged or
  // deleted ... until a replica that still holds the state writes it back", which none could.
  it("predicts the start from the initial state for a log of one state that never had one", async () => {
    const log = new MemoryLog();
    const stray = JSON.stringify({
      ...{ v: 3, kind: "command", ts: 1_700_000_000_000, seed: 1, client: "old" },
      ...{ name: "increment", args: { by: 100 }, mv: counter.version },
    });
    log.injectRaw(stray);
    log.injectRaw(stray);
    const problem = await checkFirstEntry(log, await log.info()).catch((e: StateSyncError) => e);
    expect(problem).toMatchObject({ code: "CORRUPT_ENTRY", details: { revision: 1 } });
    expect((problem as Error).message).toMatch(
      /would start it again from the model's initial state/,
    );
    const fresh = await createSynchronizer({ log, model: counter, live: false });
    expect(fresh.state).toEqual(counter.initial);
    await fresh.close();
    // Started again: the log now holds a starting point after the strays.
    await expect(checkFirstEntry(log, await log.info())).resolves.toBeUndefined();
  });
});
