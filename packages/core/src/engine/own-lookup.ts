import { decodeEntry } from "../entry.js";
import type { RevisionedLog } from "../log.js";

/** Most entries read to look for an own entry whose acknowledgement was lost. */
export const MAX_LOOKUP_SCAN = 10_000;

/** What this replica itself remembers of the entries it consumed. */
export interface OwnHistory {
  /** Revision of the last entry consumed. */
  readonly revision: number;
  /** Revision at which the entry with `messageId` was consumed recently, if it was. */
  recentRevisionOf(messageId: string): number | undefined;
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
 * 2. the retained log after the position looked from;
 * 3. where a compaction truncated positions after it: the `recent` list of the snapshot entry
 *    the log now starts with, which names the message ids of the entries before it (a list by
 *    revision, never filtered by anyone's clock). A list that does not reach back far enough
 *    makes the answer `unknown`, never `absent`.
 */
export class OwnLookup {
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
  async locate(messageId: string, after: number, scope: "next" | "range"): Promise<Lookup> {
    const local = this.history.recentRevisionOf(messageId);
    if (local !== undefined && local > after) return { kind: "found", revision: local };
    const info = await this.log.info();
    const tail = info.latestRevision;
    if (tail <= after) return { kind: "absent", tail };
    const first = info.firstRevision === 0 ? tail + 1 : info.firstRevision;
    let from = after;
    if (first > after + 1) {
      // Positions after `after` may have been truncated: the snapshot entry there tells.
      const record = await this.inSnapshotRecord(messageId, after, first);
      if (record.kind !== "absent") return record;
      if (scope === "next" || first > tail) return { kind: "absent", tail };
      from = first - 1;
    }
    if (scope === "next") {
      const hit = await this.log.findByMessageId(messageId, after);
      return hit !== undefined ? { kind: "found", revision: hit } : { kind: "absent", tail };
    }
    if (tail - from > MAX_LOOKUP_SCAN) {
      const why = `${tail - from} entries were appended since; at most ${MAX_LOOKUP_SCAN} are read`;
      return { kind: "unknown", purged: false, why };
    }
    const hit = await this.log.findByMessageId(messageId, from, tail - from);
    return hit !== undefined ? { kind: "found", revision: hit } : { kind: "absent", tail };
  }

  /** Looks in the `recent` list of the snapshot entry at `first`, the log's first entry. */
  private async inSnapshotRecord(messageId: string, after: number, first: number): Promise<Lookup> {
    const unknown = (why: string): Lookup => ({ kind: "unknown", purged: true, why });
    const entry = await this.log.entryAt(first);
    const decoded = entry && decodeEntry(entry.data);
    // A chunked snapshot's part 0 carries the same list (the log is truncated before it).
    const start = decoded?.ok ? decoded.entry : undefined;
    if (start?.kind !== "snapshot" && !(start?.kind === "part" && start.index === 0)) {
      return unknown(`the log was truncated after revision ${after} and holds no snapshot entry`);
    }
    const snapshot = start;
    // Nothing of this state lies between `after` and a snapshot entry based on it.
    if (snapshot.base <= after) return { kind: "absent", tail: first };
    const recent = snapshot.recent ?? [];
    const hit = recent.find((r) => r[0] === messageId);
    if (hit) return { kind: "found", revision: hit[1] };
    // The list names every entry with a message id from its oldest one on (Replay keeps it so).
    if (recent.length > 0 && recent[0]![1] <= after + 1) return { kind: "absent", tail: first };
    return unknown(
      `the log was truncated after revision ${after} and the snapshot entry at revision ${first} ` +
        `does not record the message ids that far back`,
    );
  }
}
