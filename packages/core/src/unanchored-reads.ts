import { StateSyncError } from "./errors.js";

/** What a replay with no state says of a log that holds no start: see {@link UnanchoredReads}. */
const WAY_OUT =
  "a replica that still holds the state writes it back (compact(); one that compacts does so at its next configuration check, docs/guarantees.md)";

/**
 * What a replay read while it had no state to apply entries to (`Replay`, not anchored): where
 * its reading began and the first gap in it, for `Replay.neverStarted` (a log of one state read
 * from revision 1 on without a gap never had a starting point) and for a `TRUNCATED` that names
 * the entries the log no longer holds. That is what lies before the first entry read (or at the
 * first gap after it), not what follows the replay's revision: an entry skipped as malformed
 * moves the revision without a state, and a fresh replica whose log started with a garbage entry
 * at 8 (a hand purge of 1-7) said "no longer holds the entries after revision 8 (next retained:
 * 9)" although 9 follows 8 and 1-7 were missing (a new user's trial).
 */
export class UnanchoredReads {
  /** The first entry read (0: read with a state; undefined: none yet). */
  first: number | undefined;
  /** The last entry read without a state in a row from revision 1 (-1: after a gap). */
  private through = 0;
  /** The first gap read without a state: the revision before it (0: the start) and after it. */
  private gap: { after: number; next: number } | undefined;

  constructor(private readonly contiguous: boolean) {}

  /** Notes the entry at `revision`, read with a state (`anchored`) or without. */
  note(revision: number, anchored: boolean): void {
    this.first ??= anchored ? 0 : revision;
    if (anchored || this.through < 0) return;
    if (revision === this.through + 1) this.through = revision;
    else [this.gap, this.through] = [{ after: this.through, next: revision }, -1];
  }

  /** Every entry of a log of one state read from revision 1 on, without a gap. */
  get fromTheStart(): boolean {
    return this.contiguous && this.first === 1 && this.through >= 0;
  }

  /**
   * The `TRUNCATED` of a replay that read up to `last` without finding an entry to start from:
   * the entries missing before the first it read (in a log of one state: at its first gap), or
   * none (a log that never had a start).
   */
  noStart(last: number): StateSyncError {
    const first = this.first || last;
    const gap = this.contiguous ? this.gap : { after: 0, next: first };
    const missing =
      gap === undefined
        ? `the log holds no genesis or snapshot entry to start from up to revision ${last}`
        : `the log no longer holds the entries ${gap.after === 0 ? `before revision ${gap.next}` : `after revision ${gap.after} (next retained: ${gap.next})`} (purged or deleted), and holds no genesis or snapshot entry to start from up to revision ${last}`;
    return new StateSyncError("TRUNCATED", `${missing}; ${WAY_OUT}`, {
      details: { after: gap?.after ?? 0, next: gap?.next ?? first, last },
    });
  }
}
