import { afterEach, describe, expect, it } from "vitest";
import { MemoryLog, type LogEntry, type LogInfo } from "@statesync/core";
import { open } from "./fixtures.js";

/**
 * A catch-up whose read is overtaken by compactions (reader.ts, `readRange`). A trial (stop 33):
 * a replica behind a slow proxy, on a log three writers compacted every 40 entries, asked the log
 * where it ends, and by the time its read started a compaction had truncated the log past that
 * revision: the read found nothing; four such reads in a row and the replica stalled `TRUNCATED`
 * for good, on a log that held everything it needed (a snapshot entry). Here a compaction runs
 * between every `info()` and the read after it.
 */
const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0)) await stop();
});

/** The victim's handle: `afterInfo` runs after each `info()` answer, before the caller reads. */
class Overtaken extends MemoryLog {
  afterInfo: (() => Promise<void>) | undefined;
  override async info(): Promise<LogInfo> {
    const info = await super.info();
    await this.afterInfo?.();
    return info;
  }
}

describe("a catch-up overtaken by compactions again and again", () => {
  it("reads on to the snapshot entry instead of stalling TRUNCATED", async () => {
    const log = new Overtaken();
    const writer = await open(log.handle(), { clientId: "writer", compaction: false });
    stops.push(() => writer.close());
    await writer.update("increment", { by: 1 });
    const victim = await open(log, { clientId: "victim", live: false, compaction: false });
    stops.push(() => victim.close());
    await writer.update("increment", { by: 1 }); // the victim (not following) is behind
    let compactions = 0;
    log.afterInfo = async () => {
      if (compactions >= 8) return;
      compactions += 1;
      for (let i = 0; i < 3; i++) await writer.update("increment", { by: 1 });
      await writer.compact(); // the log now starts past the revision info() just answered
    };
    const synced = await victim.synced().then(
      (r) => r,
      (e: Error) => e,
    );
    log.afterInfo = undefined;
    // Overtaken at least once (before the fix: four short reads, then TRUNCATED for good).
    expect(compactions).toBeGreaterThanOrEqual(2);
    expect(synced).toBeTypeOf("number");
    expect(victim.status).not.toBe("stalled");
    await writer.synced();
    await victim.synced();
    expect(victim.state).toEqual(writer.state);
  });
});

/**
 * A handle whose range reads take their end first and only then deliver, as `JetStreamLog`'s do
 * (stream info, then a consumer): `duringRead` runs in between. It keeps the promise of
 * `RevisionedLog.read`: a read to the log's end that lost what it was to read still ends with
 * the first entry retained after it.
 */
class ReadOvertaken extends MemoryLog {
  duringRead: (() => Promise<void>) | undefined;
  override async *read(fromRevision: number, toRevision: number): AsyncIterable<LogEntry> {
    const end = Math.min(toRevision, (await super.info()).latestRevision);
    await this.duringRead?.();
    let last = fromRevision - 1;
    for await (const entry of super.read(fromRevision, end)) {
      last = entry.revision;
      yield entry;
    }
    if (toRevision !== Number.POSITIVE_INFINITY || last >= end) return;
    for await (const entry of super.read(last + 1, toRevision)) return yield entry;
  }
}

describe("an opening overtaken by chunked compactions, read after read", () => {
  it("counts a read that brought a part 0 as progress, and loads the snapshot that held on", async () => {
    // A new user's trial: beside replicas compacting a 4 MB state (chunked) in a loop, each read
    // to the log's end brought only the part 0 of the newest chunked snapshot, and the catch-up
    // stalled TRUNCATED after four of them, as if they had brought nothing.
    const log = new ReadOvertaken({ maxEntryBytes: 4096 });
    const writer = await open(log.handle(), { clientId: "writer", compaction: false });
    stops.push(() => writer.close());
    for (let i = 0; i < 40; i++)
      await writer.updateUnconditionally("push", { item: "x".repeat(300) });
    await writer.compact(); // chunked: a state of some 12 KB in entries of at most 4 KiB
    let compactions = 0;
    log.duringRead = async () => {
      if (compactions >= 8) return;
      compactions += 1;
      await writer.update("increment", { by: 1 });
      await writer.compact(); // new parts past the read's end, everything before them purged
    };
    const victim = await open(log, { clientId: "victim", live: false, compaction: false }).then(
      (v) => v,
      (e: Error) => e,
    );
    log.duringRead = undefined;
    expect(victim).not.toBeInstanceOf(Error);
    if (victim instanceof Error) return;
    expect(compactions).toBeGreaterThanOrEqual(5); // more overtaken reads than the four allowed
    stops.push(() => victim.close());
    expect(victim.errors).toEqual([]);
    await victim.synced();
    expect(victim.revision).toBe(writer.revision);
    expect(victim.state).toEqual(writer.state);
  });
});
