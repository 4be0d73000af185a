/**
 * What the engine's replay makes of each entry of a log, one entry at a time, for tools that
 * list entries (the CLI's `history` and `tail`): the verdict of the same {@link Replay} every
 * replica runs, so a listing marks exactly the entries every replica skips, makes a no-op of or
 * stops at (before, the CLI marked only entries that do not decode, and printed a stale
 * conditional update or a command whose arguments fail the schema as if it applied: fresh-eyes
 * trial).
 */
import type { StateSyncError } from "./errors.js";
import type { LogEntry } from "./log.js";
import type { CommandMap, Model } from "./model.js";
import { Replay } from "./replay.js";

/** What the replay did with one entry. */
export type EntryVerdict =
  /** Applied: it changed the state, or is a starting point, an intent or a part. */
  | { readonly kind: "applied" }
  /**
   * Skipped by every replica alike: malformed (`CORRUPT_ENTRY`, a conditional update on a stale
   * base among them), an older version's command after a switch (`OUTDATED_COMMAND`).
   */
  | { readonly kind: "skipped"; readonly error: StateSyncError }
  /**
   * Consumed without effect, by every replica alike: a command whose arguments fail their schema
   * (`error`: `VALIDATION`), whose recipe threw or whose result fails the schema
   * (`COMMAND_FAILED`), or a re-sent queued update already applied (`duplicate`).
   */
  | { readonly kind: "no-op"; readonly error?: StateSyncError; readonly duplicate?: true }
  /**
   * Held until a chunked snapshot entry loads its parts (the replay has no state to apply it to
   * yet); `error`: a chunked snapshot entry refused.
   */
  | { readonly kind: "held"; readonly error?: StateSyncError }
  /** The replay stops before it: every replica stops there (`error` says why). */
  | { readonly kind: "stops"; readonly error: StateSyncError }
  /** After the entry the replay stopped at (revision `stoppedAt`): never replayed. */
  | { readonly kind: "unreached"; readonly stoppedAt: number };

/**
 * A replay of `model` over a log, fed its entries in order from the first retained one
 * (`contiguous`: `log.contiguous`); {@link next} gives each entry's verdict.
 */
export class EntryVerdicts<S, C extends CommandMap<S>> {
  private readonly replay: Replay<S, C>;
  private stoppedAt: number | undefined;

  constructor(model: Model<S, C>, contiguous: boolean) {
    this.replay = new Replay(model, contiguous);
  }

  /** The verdict on `entry`, the entry after the last one given. */
  next(entry: LogEntry): EntryVerdict {
    if (this.stoppedAt !== undefined) return { kind: "unreached", stoppedAt: this.stoppedAt };
    const r = this.replay.step(entry);
    switch (r.kind) {
      case "applied":
        if (r.error) return { kind: "no-op", error: r.error };
        return r.duplicate ? { kind: "no-op", duplicate: true } : { kind: "applied" };
      case "skipped":
        return { kind: "skipped", error: r.error };
      case "stall":
        this.stoppedAt = entry.revision;
        return { kind: "stops", error: r.error };
      case "pending":
        return r.error ? { kind: "held", error: r.error } : { kind: "held" };
      case "ignored":
        return { kind: "no-op" };
    }
  }
}
