import { describe, expect, it } from "vitest";
import { OwnLookup } from "../src/engine/own-lookup.js";
import type { RecentEntry } from "../src/entry-types.js";
import type { LogEntry } from "../src/log.js";
import { MemoryLog } from "../src/memory-log.js";
import { compact, nobody } from "./support/compactions.js";

/** A log whose next `entryAt` or `findByMessageId` runs `before` first (a compaction that lands mid-look). */
class RacedLog extends MemoryLog {
  before: {
    entryAt?: () => Promise<unknown>;
    find?: () => Promise<unknown>;
    /**
     * Runs once a read has fixed its end at the latest revision, as a JetStream read does (which
     * to the log's end still yields the first entry retained past what it lost: `RevisionedLog.read`).
     */
    read?: () => Promise<unknown>;
  } = {};
  /** The first revision `info` reports instead of the true one (a stale `first_seq`). */
  staleFirst: number | undefined;
  override async info() {
    const info = await super.info();
    return this.staleFirst === undefined ? info : { ...info, firstRevision: this.staleFirst };
  }
  override async entryAt(revision: number): Promise<LogEntry | undefined> {
    const run = this.before.entryAt;
    this.before.entryAt = undefined;
    await run?.();
    return super.entryAt(revision);
  }
  override async *read(from: number, to: number): AsyncIterable<LogEntry> {
    const last = (await super.info()).latestRevision;
    const run = this.before.read;
    this.before.read = undefined;
    await run?.();
    let read = from - 1;
    for await (const entry of super.read(from, Math.min(to, last))) {
      read = entry.revision;
      yield entry;
    }
    if (to !== Number.POSITIVE_INFINITY || read >= last) return;
    for await (const entry of super.read(read + 1, to)) return yield entry;
  }
  override async findByMessageId(id: string, after: number, scan?: number) {
    const run = this.before.find;
    this.before.find = undefined;
    await run?.();
    return super.findByMessageId(id, after, scan);
  }
}

/** A raced log holding "first", the entry `id` (at revision 2, returned) and "later". */
function seeded(id: string): { log: RacedLog; at: number } {
  const log = new RacedLog();
  log.injectRaw("first");
  const at = log.injectRaw(id.replace(/-id$/, ""), id);
  log.injectRaw("later");
  return { log, at };
}

/**
 * A trial (3 replicas compacting a 150 KB state while their connections were cut as slow
 * consumers) saw 677 of 4,500 updates fail `UNKNOWN_OUTCOME` with "the log was truncated ... and
 * holds no snapshot entry": each look-up read where the log started, and a newer compaction
 * removed that snapshot entry before it was read. A scan cut short the same way said `absent`,
 * and the caller would have sent the entry again.
 */
describe("OwnLookup while compactions truncate the log", () => {
  it("reads the newer snapshot entry when the one the log started with was truncated meanwhile", async () => {
    const { log, at: mine } = seeded("mine-id");
    const recent: RecentEntry[] = [["mine-id", mine, 1]];
    await compact(log, recent);
    log.before.entryAt = () => compact(log, recent);
    const seen = await new OwnLookup(log, nobody).locate("mine-id", 1, "range");
    expect(seen).toEqual({ kind: "found", revision: mine });
  });

  it("looks again when a scan's start was truncated under it, instead of saying absent", async () => {
    const { log, at: mine } = seeded("mine-id");
    log.before.find = () => compact(log, [["mine-id", mine, 1]]);
    const seen = await new OwnLookup(log, nobody).locate("mine-id", 1, "range");
    expect(seen).toEqual({ kind: "found", revision: mine });
  });

  it("says unknown, never absent, when compactions keep truncating every scan", async () => {
    const { log, at: other } = seeded("other-id");
    const again = async () => {
      log.before.find = again;
      await compact(log, [["other-id", other, 1]]);
    };
    log.before.find = again;
    const seen = await new OwnLookup(log, nobody).locate("mine-id", 1, "range");
    expect(seen).toMatchObject({ kind: "unknown", purged: true });
    expect((seen as { why: string }).why).toMatch(/look-ups in a row/);
  });

  it("finds the log's first entry when the log reports a first revision it no longer holds", async () => {
    // nats-server 2.9.10 after filtered purges of 150 KB entries: `first_seq` 55 for minutes,
    // `messages` 1, `num_deleted` 1,361, and 55 itself not found.
    const { log, at: mine } = seeded("mine-id");
    const recent: RecentEntry[] = [["mine-id", mine, 1]];
    log.staleFirst = await compact(log, recent);
    await compact(log, recent);
    const seen = await new OwnLookup(log, nobody).locate("mine-id", 1, "range");
    expect(seen).toEqual({ kind: "found", revision: mine });
  });

  it("finds the snapshot entry a compaction appended after its read fixed its end", async () => {
    // The same trial, with the fix above: a read of the log's first entry from a stale
    // `first_seq` ended at the latest revision it saw; a compaction appended its snapshot entry
    // after it and truncated everything before, and the read came back empty (read again then;
    // now such a read ends with that snapshot entry).
    const { log, at: mine } = seeded("mine-id");
    const recent: RecentEntry[] = [["mine-id", mine, 1]];
    await compact(log, recent);
    log.staleFirst = mine;
    log.before.read = () => compact(log, recent);
    const seen = await new OwnLookup(log, nobody).locate("mine-id", 0, "range");
    expect(seen).toEqual({ kind: "found", revision: mine });
  });

  it("still says absent for an entry that is in no record and not in the log", async () => {
    const log = new RacedLog();
    log.injectRaw("first");
    log.injectRaw("later");
    await compact(log, [["someone-else", 2, 1]]);
    const seen = await new OwnLookup(log, nobody).locate("mine-id", 2, "range");
    expect(seen.kind).toBe("absent");
  });
});

/** A log whose scans take a while and count how many run at once. */
class SlowScans extends MemoryLog {
  running = 0;
  most = 0;
  override async findByMessageId(id: string, after: number, scan?: number) {
    this.running += 1;
    this.most = Math.max(this.most, this.running);
    await new Promise((r) => setTimeout(r, 5));
    this.running -= 1;
    return super.findByMessageId(id, after, scan);
  }
}

/**
 * The same trial with `max_pending: 16MB`: hundreds of unconditional appends lost their
 * acknowledgements at each cut, each look-up read the log at once, together past the server's
 * `max_pending`, and the server cut the connection again (114 cuts in 2 minutes).
 */
describe("OwnLookup runs one look-up at a time", () => {
  it("answers many look-ups, one read at a time, and what the replica read at once", async () => {
    const log = new SlowScans();
    log.injectRaw("first");
    const ids = Array.from({ length: 20 }, (_, i) => `id-${i}`);
    const revisions = ids.map((id) => log.injectRaw(id, id));
    const seen = new Map<string, number>([["known", 99]]);
    const lookup = new OwnLookup(log, {
      revision: 0,
      recordedFrom: Infinity,
      recentRevisionOf: (id) => seen.get(id),
    });
    const order: string[] = [];
    const all = ids.map((id) => lookup.locate(id, 1, "range").then((r) => (order.push(id), r)));
    const known = lookup.locate("known", 1, "range").then((r) => (order.push("known"), r));
    expect(await known).toEqual({ kind: "found", revision: 99 });
    expect(await Promise.all(all)).toEqual(
      revisions.map((revision) => ({ kind: "found", revision })),
    );
    expect(log.most).toBe(1);
    expect(order[0]).toBe("known"); // it did not wait behind the reads
  });

  it("does not hold a conditional append's look-up behind the scans", async () => {
    const log = new SlowScans();
    log.injectRaw("first");
    const ids = Array.from({ length: 20 }, (_, i) => `id-${i}`);
    for (const id of ids) log.injectRaw(id, id);
    const lookup = new OwnLookup(log, nobody);
    const order: string[] = [];
    const scans = ids.map((id) => lookup.locate(id, 1, "range").then(() => order.push(id)));
    // The entry right after revision 5 (a conditional append on 5), looked for at once.
    const next = lookup.locate("id-4", 5, "next").then((r) => (order.push("next"), r));
    expect(await next).toEqual({ kind: "found", revision: 6 });
    await Promise.all(scans);
    expect(order.indexOf("next")).toBeLessThan(3);
  });
});

/** A log that notes the ranges `findByMessageId` scans. */
class NotedScans extends MemoryLog {
  scans: Array<[after: number, scan: number | undefined]> = [];
  override findByMessageId(id: string, after: number, scan?: number) {
    this.scans.push([after, scan]);
    return super.findByMessageId(id, after, scan);
  }
}

/**
 * A look-up reads only what the replica has not consumed and recorded: a replica re-sending 20
 * commands under load scanned the same thousands of entries for each, one after the other, and
 * its last ones reached their deadline (a fresh-eyes trial, stop 29).
 */
describe("OwnLookup reads only past what the replica recorded", () => {
  /** A look-up for a replica at `revision` whose record is complete from `recordedFrom` on. */
  const recordedUpTo = (log: MemoryLog, revision: number, recordedFrom: number) =>
    new OwnLookup(log, { revision, recordedFrom, recentRevisionOf: () => undefined });
  function logOf(entries: number) {
    const log = new NotedScans();
    for (let i = 1; i <= entries; i++) log.injectRaw(`e${i}`, `id-${i}`);
    return log;
  }

  it("scans from the replica's revision when its record covers the positions looked from", async () => {
    const log = logOf(100);
    const lookup = recordedUpTo(log, 90, 5);
    expect(await lookup.locate("mine", 10, "range")).toEqual({ kind: "absent", tail: 100 });
    expect(log.scans).toEqual([[90, 10]]);
    log.injectRaw("mine", "mine"); // at 101
    expect(await lookup.locate("mine", 10, "range")).toEqual({ kind: "found", revision: 101 });
  });

  it("answers absent without a read when the replica consumed up to the tail", async () => {
    const log = logOf(100);
    const lookup = recordedUpTo(log, 100, 11);
    expect(await lookup.locate("mine", 10, "range")).toEqual({ kind: "absent", tail: 100 });
    expect(log.scans).toEqual([]);
  });

  it("scans from the position looked from when the record starts after it", async () => {
    const log = logOf(100);
    const lookup = recordedUpTo(log, 90, 12);
    expect(await lookup.locate("id-11", 10, "range")).toEqual({ kind: "found", revision: 11 });
    expect(await lookup.locate("mine", 10, "range")).toEqual({ kind: "absent", tail: 100 });
    expect(log.scans).toEqual([
      [10, 90],
      [10, 90],
    ]);
  });

  it("finds in the record what the replica consumed", async () => {
    const log = logOf(100);
    const history = {
      revision: 90,
      recordedFrom: 1,
      recentRevisionOf: (id: string) => (id === "id-50" ? 50 : undefined),
    };
    expect(await new OwnLookup(log, history).locate("id-50", 10, "range")).toEqual({
      kind: "found",
      revision: 50,
    });
    expect(log.scans).toEqual([]);
  });
});
