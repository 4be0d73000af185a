/**
 * What the engine's replay makes of each entry of a log, one entry at a time, for tools that
 * list entries (the CLI's `history` and `tail`): the verdict of the same {@link Replay} every
 * replica runs, so a listing marks exactly the entries every replica skips, makes a no-op of or
 * stops at (before, the CLI marked only entries that do not decode, and printed a stale
 * conditional update or a command whose arguments fail the schema as if it applied: fresh-eyes
 * trial).
 *
 * One verdict depends on the replica, not the log alone: while the log is at an older version,
 * replicas check that the state migrates after each run of plain entries they apply together
 * (`replay-runs.ts`), so a state that fails to migrate and is repaired by a later plain entry
 * stops the replicas that checked it (a live follower that received it alone) and not the
 * others (a catch-up that read on to the repair): `may-stop`, and the replay goes on. When no
 * plain entry repairs it (the run of failing states ends at another kind of entry, or the log
 * ends), every replica stops at its first entry: {@link stop}, {@link end}. (Before, the check
 * ran after every entry, and `history --model` marked such an entry `stops` and every later one
 * `not replayed` while `verify` said ok: a fresh-eyes trial.)
 */
import { batchItem } from "./apply.js";
import { StateSyncError } from "./errors.js";
import type { LogEntry } from "./log.js";
import type { CommandMap, Model } from "./model.js";
import { Replay } from "./replay.js";
import type { StepResult } from "./replay-types.js";
import { writerVersion } from "./versions.js";

/** What the replay did with one entry. */
export type EntryVerdict =
  /**
   * Applied: it changed the state, or is a starting point, an intent or a part. `failures`: the
   * commands of a `commands` entry consumed without effect (`details.index`), the others applied.
   * `replayed`: a chunked snapshot entry loaded from its parts, the verdicts on the entries held
   * since its part 0 (each `held` when given), replayed onto its state.
   */
  | {
      readonly kind: "applied";
      readonly failures?: readonly StateSyncError[];
      readonly replayed?: ReadonlyArray<{
        readonly revision: number;
        readonly verdict: EntryVerdict;
      }>;
    }
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
   * A shared stream's key started again: a genesis entry after its entries, which every replica
   * applies, the state becoming the model's initial state (`error`: `TRUNCATED`, with
   * `details.restartedAt`). Before, `verify` and `history` called it skipped, a no-op.
   */
  | { readonly kind: "restarts"; readonly error: StateSyncError }
  /**
   * Held until a chunked snapshot entry loads its parts (the replay has no state to apply it to
   * yet); `error`: a chunked snapshot entry refused.
   */
  | { readonly kind: "held"; readonly error?: StateSyncError }
  /** The replay stops before it: every replica stops there (`error` says why). */
  | { readonly kind: "stops"; readonly error: StateSyncError }
  /**
   * Applied, but the state after it does not migrate to the model's version (`error`:
   * `VALIDATION`) while a later plain entry may repair it: replicas that check this state alone
   * stop before it, the others go on. Settled by {@link EntryVerdicts.stop} when it turns out
   * every replica stops there.
   */
  | { readonly kind: "may-stop"; readonly error: StateSyncError }
  /** After the entry the replay stopped at (revision `stoppedAt`): never replayed. */
  | { readonly kind: "unreached"; readonly stoppedAt: number };

/** Where every replica stops: the revision of the entry, and why. */
export interface ReplayStop {
  readonly stoppedAt: number;
  readonly error: StateSyncError;
}

/**
 * A replay of `model` over a log, fed its entries in order from the first retained one
 * (`contiguous`: `log.contiguous`); {@link next} gives each entry's verdict.
 */
export class EntryVerdicts<S, C extends CommandMap<S>> {
  private readonly replay: Replay<S, C>;
  private stopped: ReplayStop | undefined;
  /** The first of the states in a row that fail to migrate, not repaired yet (`may-stop`). */
  private failing: ReplayStop | undefined;

  constructor(model: Model<S, C>, contiguous: boolean) {
    this.replay = new Replay(model, contiguous);
    this.replay.checkMigrations = false; // checked here, so a state repaired later goes on
    this.replay.scanForStart = true; // as a replica: read past to a starting point after them
  }

  /** The verdict on `entry`, the entry after the last one given. */
  next(entry: LogEntry): EntryVerdict {
    if (this.stopped) return { kind: "unreached", stoppedAt: this.stopped.stoppedAt };
    const r = this.replay.step(entry);
    const plain = this.plain(r, entry.revision);
    if (this.failing) {
      // Every replica's run ends at a failing state unless a plain entry carries it on.
      if (!plain) return this.stopAt(this.failing);
      if (this.migrationError() === undefined) this.failing = undefined; // repaired
      return { kind: "applied" };
    }
    const verdict = this.verdictOf(r, entry.revision);
    if (verdict.kind !== "applied" && verdict.kind !== "held") return verdict;
    const error = this.migrationError();
    if (error === undefined) return verdict;
    const failed = { stoppedAt: entry.revision, error };
    if (!plain) {
      this.stopped = failed; // applied alone: every replica checks it
      return { kind: "stops", error };
    }
    this.failing = failed;
    return { kind: "may-stop", error };
  }

  /** Where every replica stops, as known from the entries given so far (undefined: nowhere). */
  get stop(): ReplayStop | undefined {
    return this.stopped;
  }

  /**
   * Where every replica stops if the log ends after the last entry given: {@link stop}, or the
   * first of the states that fail to migrate still unrepaired (its entry was `may-stop`).
   */
  end(): ReplayStop | undefined {
    if (this.stopped) return this.stopped;
    const unusable = this.replay.unusableStart; // entries read past, no start after them
    const at = unusable?.details.next;
    if (unusable && typeof at === "number") return { stoppedAt: at, error: unusable };
    return this.failing;
  }

  /**
   * Whether a `may-stop` waits for a later entry to repair its state, or entries read past wait
   * for a starting point after them.
   */
  get pending(): boolean {
    if (this.stopped !== undefined) return false;
    return this.failing !== undefined || this.replay.unusableStart !== undefined;
  }

  private stopAt(stop: ReplayStop): EntryVerdict {
    this.stopped = stop;
    return { kind: "unreached", stoppedAt: stop.stoppedAt };
  }

  private verdictOf(r: StepResult, revision: number): EntryVerdict {
    switch (r.kind) {
      case "applied":
        if (r.replayed) {
          const replayed = r.replayed.map((s) => ({
            revision: s.revision,
            verdict: this.verdictOf(s.result, s.revision),
          }));
          return { kind: "applied", replayed };
        }
        if (r.error?.details.restartedAt !== undefined) return { kind: "restarts", error: r.error };
        if (r.error) return { kind: "no-op", error: r.error };
        if (r.failures) return { kind: "applied", failures: r.failures };
        return r.duplicate ? { kind: "no-op", duplicate: true } : { kind: "applied" };
      case "skipped":
        return { kind: "skipped", error: r.error };
      case "stall":
        this.stopped = { stoppedAt: revision, error: r.error };
        return { kind: "stops", error: r.error };
      case "pending":
        return r.error ? { kind: "held", error: r.error } : { kind: "held" };
      case "ignored":
        return { kind: "no-op" };
    }
  }

  /**
   * Whether `r` applied a plain entry, one a replica applies in a run with those around it
   * (`RunReplay.plainRun`): an update or a known command of the log's version, with effect.
   */
  private plain(r: StepResult, revision: number): boolean {
    if (r.kind !== "applied" || r.error || r.duplicate) return false;
    const { entry } = r;
    if (entry.kind !== "update" && entry.kind !== "command") return false;
    const { logModel, switchedFrom } = this.replay;
    if (
      entry.kind === "command" &&
      writerVersion(entry, logModel, switchedFrom) !== logModel.version
    )
      return false;
    return batchItem(logModel, entry, revision) !== undefined;
  }

  /** The error migrating the replay's state to the model's version (`VALIDATION`), if any. */
  private migrationError(): StateSyncError | undefined {
    if (!this.replay.legacy) return undefined;
    try {
      this.replay.answer();
      return undefined;
    } catch (e) {
      return e instanceof StateSyncError
        ? e
        : new StateSyncError("VALIDATION", `migrating failed: ${String(e)}`, { cause: e });
    }
  }
}
