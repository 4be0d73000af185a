/**
 * What every replica does with a state's entries, whatever its model, for `info` (which has no
 * model): which entries it skips as malformed (`CORRUPT_ENTRY`) and where it stops. These are
 * the rules of the engine's replay (core's replay.ts, `Replay.step`) that need no model:
 * - an entry that does not decode is skipped, or stops the replay when its format is newer
 *   (`UNSUPPORTED_FORMAT`);
 * - a second genesis entry is skipped in a log of one state; in a shared stream it is the key
 *   starting again (purged by an operator), and the replay goes on from it;
 * - a conditional update based on another revision than the entry before it is skipped; in a
 *   shared stream, where revisions of one state have gaps anyway, one based on a later revision
 *   stops the replay (`TRUNCATED`: entries were missed);
 * - a skipped entry still moves the revision: the next update must be based on it;
 * - a gap in a log of one state stops the replay (`TRUNCATED`), unless a snapshot or switch
 *   entry, or a chunked snapshot's part 0, follows it.
 * The first entry must be a genesis, a snapshot entry or a part 0 (`firstEntryProblem`, as the
 * model commands refuse it); readable entries before one are read past (`end()` reports the
 * stop when none comes). A chunked snapshot's parts are taken to load (checking them needs
 * the model's schema), and what only the model decides is left to `verify`: commands of an older
 * model version (`OUTDATED_COMMAND`), snapshot states the schema refuses, commands that fail.
 */
import { StateSyncError, type DecodeResult } from "@statesync/node";
import { firstEntryProblem } from "./replica.js";

/** One entry that is skipped, or where the replay stops. */
export interface ChainEvent {
  readonly revision: number;
  readonly code: string;
  readonly problem: string;
}

/** Feeds a state's retained entries in order; counts the skipped ones and finds the stop. */
export class ChainCheck {
  /** Entries every replica skips as malformed (before the stop). */
  malformed = 0;
  firstMalformed: ChainEvent | null = null;
  /** Where every replica stops; entries after it are never read. */
  stop: ChainEvent | null = null;
  /** The revision consumed last (undefined before the first entry). */
  private revision: number | undefined;
  /**
   * Why the first entries cannot start a replay, while no starting point has come after them:
   * a replica reads past them (core's `Replay.readPast`); the stop, if the log ends so.
   */
  private unusable: { revision: number; error: StateSyncError } | undefined;

  constructor(private readonly contiguous: boolean) {}

  /** Consumes the entry at `revision`, `decoded` being `decodeEntry` of its data. */
  step(revision: number, decoded: DecodeResult): void {
    if (this.stop !== null) return;
    const prev = this.revision;
    if (prev === undefined) {
      const problem = firstEntryProblem(revision, decoded);
      if (problem?.code === "TRUNCATED" || (problem && this.unusable)) {
        this.unusable ??= { revision, error: problem };
        return; // read past, to a starting point after it
      }
      if (problem) return this.stopAt(revision, problem);
      this.unusable = undefined;
      // A part 0: once loaded, the replay stands on its base and replays from it.
      const x = decoded.ok ? decoded.entry : undefined;
      this.revision = x?.kind === "part" ? x.base : revision - 1;
    }
    const last = this.revision!;
    const gap = this.contiguous && revision !== last + 1;
    if (!decoded.ok) {
      if (decoded.error.code === "UNSUPPORTED_FORMAT") return this.stopAt(revision, decoded.error);
      return gap ? this.stopAt(revision, truncated(last, revision)) : this.skip(revision, decoded);
    }
    const x = decoded.entry;
    // A part 0 past the revision here (after a gap; in a shared stream, based past it): the
    // replay collects, and its snapshot entry loads the state at its base if part 0 follows it.
    const missed = !this.contiguous && x.kind === "part" && x.index === 0 && x.base > last;
    if (x.kind === "part" && x.index === 0 && (gap || missed)) {
      const follows = this.contiguous ? revision === x.base + 1 : x.base < revision;
      if (x.base < last || !follows) return this.stopAt(revision, truncated(last, revision));
      return void (this.revision = revision);
    }
    if (x.kind === "snapshot" && !("parts" in x)) return void (this.revision = revision);
    if (x.kind === "switch") return void (this.revision = revision);
    if (gap) return this.stopAt(revision, truncated(last, revision));
    if (x.kind === "genesis" && prev !== undefined) {
      if (!this.contiguous) return void (this.revision = revision);
      return this.skip(revision, new StateSyncError("CORRUPT_ENTRY", "a second genesis entry"));
    }
    if (x.kind === "update" && x.base !== last) {
      // As the engine's replay: in a shared stream only a later base is a gap.
      if (!this.contiguous && x.base > last) {
        return this.stopAt(revision, missedBefore(revision, x.base, last));
      }
      const why = `conditional entry based on ${x.base}, not ${last}`;
      return this.skip(revision, new StateSyncError("CORRUPT_ENTRY", why));
    }
    this.revision = revision;
  }

  /** The log ends after the entries given: the stop, if it has found no starting point. */
  end(): void {
    if (this.stop === null && this.unusable)
      this.stopAt(this.unusable.revision, this.unusable.error);
  }

  /** A revision the log holds no entry at (`LogEntry.skipped`): stepped over, as the replay. */
  stepOver(revision: number): void {
    if (this.stop !== null || this.revision === undefined) return;
    if (this.contiguous && revision !== this.revision + 1) {
      return this.stopAt(revision, truncated(this.revision, revision));
    }
    this.revision = revision;
  }

  private skip(revision: number, skipped: StateSyncError | { error: StateSyncError }): void {
    const error = skipped instanceof StateSyncError ? skipped : skipped.error;
    this.malformed += 1;
    this.firstMalformed ??= { revision, code: error.code, problem: error.message };
    this.revision = revision;
  }

  private stopAt(revision: number, error: StateSyncError): void {
    this.stop = { revision, code: error.code, problem: error.message };
  }
}

/** The engine's `TRUNCATED` of a replay at `after` that next reads `next`. */
function truncated(after: number, next: number): StateSyncError {
  return new StateSyncError(
    "TRUNCATED",
    `the log no longer holds the entries after revision ${after} and no snapshot entry follows (next retained: ${next})`,
  );
}

/** The engine's `TRUNCATED` of a conditional entry at `at` based past `last` (shared stream). */
function missedBefore(at: number, base: number, last: number): StateSyncError {
  return new StateSyncError(
    "TRUNCATED",
    `the conditional entry at revision ${at} is based on revision ${base}, past this key's last entry the replica read (${last}): the log no longer holds the key's entries after ${last} (purged or deleted), or the entry was not written by a conditional append; no snapshot entry follows`,
  );
}
