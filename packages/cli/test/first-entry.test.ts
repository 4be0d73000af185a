import { createSynchronizer, MemoryLog, type LogInfo, type RevisionedLog } from "@statesync/node";
import { describe, expect, it } from "vitest";
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
});
