import { decodeEntry } from "../entry.js";
import { firstRetainedEntry } from "../first-retained.js";
import type { LogEntry, RevisionedLog } from "../log.js";
import { usableRecent } from "../recent-ids.js";

/** Most entries read to look for an own entry whose acknowledgement was lost. */
export const MAX_LOOKUP_SCAN = 10_000;
/** Looks in a row that a compaction may cut short (each truncated the log under it). */
const MAX_LOOKS = 5;

/** What this replica itself remembers of the entries it consumed. */
export interface OwnHistory {
  /** Revision of the last entry consumed. */
  readonly revision: number;
  /** Revision at which the entry with `messageId` was consumed recently, if it was. */
  recentRevisionOf(messageId: string): number | undefined;
  /**
   * Every entry with a message id consumed at this revision or later is recorded (Infinity when
   * none is yet: after a restore, a jump onto a snapshot entry, or a ring that dropped them).
   */
  readonly recordedFrom: number;
}

/** Where an append whose outcome is unknown landed, as far as the log and the records tell. */
export type Lookup =
  /** Stored at `revision`. */
  | { readonly kind: "found"; readonly revision: number }
  /** Not stored at any position after the one looked from, up to `tail` (the latest revision). */
  | { readonly kind: "absent"; readonly tail: number }
  /**
   * Cannot be told: the positions that would hold it were truncated and no record reaches back
   * to them (`purged`), or there are too many positions to read (not `purged`).
   */
  | { readonly kind: "unknown"; readonly purged: boolean; readonly why: string };

/**
 * Looks for an own entry by its message id after a lost acknowledgement (issue 10, case 2). The
 * server's duplicate table does not settle this alone: a server restarted after a compaction
 * rebuilds it only from the messages it still holds, and forgets every id after its duplicate
 * window. So the lookup reads, in order:
 * 1. this replica's own record of the entries it consumed (`OwnHistory`);
 * 2. the retained log after the position looked from, or after the replica's revision when its
 *    record has every entry since that position (`recordedFrom`);
 * 3. where a compaction truncated positions after it: the `recent` list of the snapshot entry
 *    the log now starts with, which names the message ids of the entries before it (a list by
 *    revision, never filtered by anyone's clock). A list that does not reach back far enough
 *    makes the answer `unknown`, never `absent`.
 */
export class OwnLookup {
  /** The scan running now (they run one at a time, see `locate`). */
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly log: RevisionedLog,
    private readonly history: OwnHistory,
  ) {}

  /**
   * Where the entry with `messageId` landed among the positions after `after`. `"next"`: only the
   * first position after `after` can hold it (a conditional append on `after`); `"range"`: any
   * position after `after` up to the tail can (an unconditional append sent when the log was at
   * `after` or later). Throws what the log throws (`UNAVAILABLE`, ...).
   */
  locate(messageId: string, after: number, scope: "next" | "range"): Promise<Lookup> {
    const recorded = this.recorded(messageId, after);
    if (recorded) return Promise.resolve(recorded);
    // One scan at a time: each reads the log, and hundreds at once (every unconditional append
    // in flight when a connection was cut) asked the server for more bytes together than its
    // `max_pending`, so it cut the connection again (a trial with `max_pending: 16MB`: 114
    // slow-consumer cuts in 2 minutes and replicas `offline` most of the time). Waiting its turn,
    // a look-up first asks the replica's own record again: it has often read the entry since.
    // A conditional append's look-up (one point read; the writer sends one batch at a time) does
    // not wait behind them: it held every conditional update of the replica meanwhile.
    const run = () => this.locateNow(messageId, after, scope);
    if (scope === "next") return run();
    const turn = this.running.then(run, run);
    this.running = turn.catch(() => undefined);
    return turn;
  }

  private async locateNow(
    messageId: string,
    after: number,
    scope: "next" | "range",
  ): Promise<Lookup> {
    const recorded = this.recorded(messageId, after);
    if (recorded) return recorded;
    // A compaction may truncate the log while it is looked at: its first entry (the snapshot
    // entry whose record tells) is then gone, or a scan found nothing because its start was
    // purged under it. Either says nothing about the entry: look again from the new start.
    for (let look = 1; ; look++) {
      const seen = await this.locateOnce(messageId, after, scope);
      if (seen.kind !== "truncated") return seen;
      if (look >= MAX_LOOKS) {
        const why = `compactions truncated the log during ${MAX_LOOKS} look-ups in a row`;
        return { kind: "unknown", purged: true, why };
      }
    }
  }

  /** Where the replica's own record says the entry landed after `after`, if it does. */
  private recorded(messageId: string, after: number): Lookup | undefined {
    const local = this.history.recentRevisionOf(messageId);
    return local !== undefined && local > after ? { kind: "found", revision: local } : undefined;
  }

  /** One look (see `locate`); `truncated` when the log was truncated under it. */
  private async locateOnce(
    messageId: string,
    after: number,
    scope: "next" | "range",
  ): Promise<Lookup | { readonly kind: "truncated" }> {
    const info = await this.log.info();
    let tail = info.latestRevision;
    if (tail <= after) return { kind: "absent", tail };
    let first = info.firstRevision === 0 ? tail + 1 : info.firstRevision;
    let from = after;
    if (first > after + 1) {
      // Positions after `after` may have been truncated: the snapshot entry there tells.
      const start = await firstRetainedEntry(this.log, first);
      // (a snapshot entry appended after `tail` by the compaction that truncated `first`)
      if (start) [first, tail] = [start.revision, Math.max(tail, start.revision)];
      const record = inSnapshotRecord(messageId, after, first, start);
      if (record.kind !== "absent") return record;
      if (scope === "next" || first > tail) return { kind: "absent", tail };
      from = first - 1;
    }
    if (scope === "next") {
      const hit = await this.log.findByMessageId(messageId, after);
      if (hit !== undefined) return { kind: "found", revision: hit };
      return (await this.truncatedSince(after + 1))
        ? { kind: "truncated" }
        : { kind: "absent", tail };
    }
    // What the replica consumed after `from` and recorded without the entry need not be read
    // again: a replica re-sending several commands scanned the same thousands of entries for
    // each, one after the other, and under load its last ones ran out of time (a trial).
    // Read together with the record, in one tick: the replica consumes nothing in between.
    const consumed = this.history.revision;
    if (consumed > from && this.history.recordedFrom <= from + 1) {
      const hit = this.recorded(messageId, from);
      if (hit) return hit;
      from = consumed;
      if (from >= tail) return { kind: "absent", tail: from };
    }
    if (tail - from > MAX_LOOKUP_SCAN) {
      const why = `${tail - from} entries were appended since; at most ${MAX_LOOKUP_SCAN} are read`;
      return { kind: "unknown", purged: false, why };
    }
    const hit = await this.log.findByMessageId(messageId, from, tail - from);
    if (hit !== undefined) return { kind: "found", revision: hit };
    // A read whose start was purged meanwhile starts at the log's new first entry, silently.
    return (await this.truncatedSince(from + 1)) ? { kind: "truncated" } : { kind: "absent", tail };
  }

  /**
   * True when the log's first entry now lies after `needed`, the first position a read of this
   * look had to see: a compaction truncated it under the read. The entry itself, not the log's
   * `firstRevision`, which nats-server 2.9.10 can leave behind (`firstRetainedEntry`).
   */
  private async truncatedSince(needed: number): Promise<boolean> {
    const info = await this.log.info();
    if (info.firstRevision === 0) return info.latestRevision >= needed;
    const start = await firstRetainedEntry(this.log, info.firstRevision);
    return (start?.revision ?? info.latestRevision + 1) > needed;
  }
}

/** Looks in the `recent` list of `start`, the log's first entry at `first` (if it holds one). */
function inSnapshotRecord(
  messageId: string,
  after: number,
  first: number,
  start: LogEntry | undefined,
): Lookup {
  const unknown = (why: string): Lookup => ({ kind: "unknown", purged: true, why });
  const decoded = start && decodeEntry(start.data);
  // A chunked snapshot's part 0 carries the same list (the log is truncated before it).
  const entry = decoded?.ok ? decoded.entry : undefined;
  if (entry?.kind !== "snapshot" && !(entry?.kind === "part" && entry.index === 0)) {
    return unknown(`the log was truncated after revision ${after} and holds no snapshot entry`);
  }
  // Nothing of this state lies between `after` and a snapshot entry based on it.
  if (entry.base <= after) return { kind: "absent", tail: first };
  const recent = usableRecent(entry.recent, entry.base);
  const hit = recent.find((r) => r[0] === messageId);
  if (hit && hit[1] > after) return { kind: "found", revision: hit[1] };
  // Sent after `after`, an entry of ours cannot lie at or before it: the list is not to be trusted.
  if (hit) return unknown(`the snapshot entry at revision ${first} names it at revision ${hit[1]}`);
  // The list names every entry with a message id from its oldest one on (Replay keeps it so).
  if (recent.length > 0 && recent[0]![1] <= after + 1) return { kind: "absent", tail: first };
  return unknown(
    `the log was truncated after revision ${after} and the snapshot entry at revision ${first} ` +
      `does not record the message ids that far back`,
  );
}
