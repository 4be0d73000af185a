import { deepFreeze } from "./freeze.js";
import { RUN_MAX, type BatchItem } from "./apply.js";
import { MAX_RECENT, type Entry, type UpdateEntry } from "./entry.js";
import type { GenesisEntry, SnapshotEntry, SwitchEntry } from "./entry.js";
import { StateSyncError } from "./errors.js";
import { findNonJson, jsonEqual } from "./json.js";
import type { LogEntry } from "./log.js";
import type { CommandMap, Model } from "./model.js";
import { Origins } from "./pending/origins.js";
import { RecentIds, usableRecent } from "./recent-ids.js";
import { StateValidity } from "./command-check.js";
import { UnanchoredReads } from "./unanchored-reads.js";
import { logModelOf, migrateUp, modelOfVersion } from "./versions.js";
import type { KeptOverReset, StepResult } from "./replay-types.js";
import { carriedStateRefusal, safeParse } from "./schema-parse.js";

export type { KeptOverReset, StepResult } from "./replay-types.js";

/**
 * What a {@link Replay} stands on: the state in the log's model version, the revision, the
 * anchor, the recent message ids, and the moves every rule ends in (advance, genesis, jump onto
 * a starting point, skip, stall). `replay.ts` has the rules that choose between them.
 */
export class ReplayState<S, C extends CommandMap<S>> {
  /** The state in the shape of the log's model version (`logModel`). */
  logState: unknown;
  /** The model of the version the log is at: `model`, or a predecessor while the log is older. */
  logModel: Model<any, any>;
  /** The version the log was at before its last switch entry (undefined: no switch seen). */
  switchedFrom: number | undefined;
  revision: number;
  /** Whether a genesis or snapshot entry (or a restored snapshot) anchors the replay. */
  anchored: boolean;
  /** Message id of the entry at `revision`. */
  messageId: string | undefined;
  /** Kind of the entry at `revision` (undefined after a restore). */
  lastKind: Entry["kind"] | undefined;
  /**
   * Where the last starting point consumed begins, so a compaction may truncate before it: a
   * one-message snapshot or switch entry's own revision, a chunked snapshot's part 0 (undefined
   * when this replay did not see it).
   */
  lastStart: number | undefined;
  /** The table of applied origins (`pending/origins.ts`): skips re-sent queued updates. */
  origins: Origins;
  /** Entries a catch-up should hand over together, as the last draft suggested (`applyBatch`). */
  preferredRun = RUN_MAX;
  /** Message ids, revisions and timestamps of entries consumed recently (see `MAX_RECENT`). */
  protected recent = new RecentIds(2 * MAX_RECENT);
  protected view: { revision: number; logState: unknown; state: S } | undefined;
  /** What was read with no state to apply it to (where the reading began, its first gap). */
  protected readonly reads: UnanchoredReads;
  /** What is known of the validity of `logState` (makes checked commands cheap: command-check.ts). */
  protected readonly validity = new StateValidity();
  /**
   * Whether the states this replay passes through must migrate up while the log is at an older
   * version (a replica stops before an entry whose state it cannot show, checked per run:
   * `RunReplay.applyRun`). A history replay (`stateAt`) sets it false: it shows one revision,
   * so only that state is migrated ({@link answer}), and a replay across a switch goes on from
   * the switch entry's carried state. Before, a state that failed to migrate in passing stopped
   * `stateAt` of every revision after it, the switch and later included (a fresh-eyes trial).
   */
  checkMigrations = true;

  constructor(
    protected readonly model: Model<S, C>,
    protected readonly contiguous: boolean,
    from?: {
      state: unknown;
      revision: number;
      messageId?: string | undefined;
      version?: number;
      switchedFrom?: number | undefined;
      origins?: ReadonlyArray<readonly [string, number, number]> | undefined;
    },
  ) {
    this.reads = new UnanchoredReads(contiguous);
    this.origins = new Origins(from?.origins);
    this.logModel = (from?.version !== undefined && modelOfVersion(model, from.version)) || model;
    this.logState = from?.state ?? model.initial;
    this.revision = from?.revision ?? 0;
    this.anchored = from !== undefined;
    this.messageId = from?.messageId;
    this.switchedFrom = from?.switchedFrom;
  }

  /**
   * The state as this model sees it: the log's state, migrated up while the log is at an older
   * version (computed once per revision). Throws `VALIDATION` when the migration fails.
   */
  get state(): S {
    if (this.logModel === this.model) return this.logState as S;
    const v = this.view;
    if (v && v.revision === this.revision && v.logState === this.logState) return v.state;
    const state = migrateUp(this.model, this.logModel, this.logState);
    this.view = { revision: this.revision, logState: this.logState, state };
    return state;
  }

  /**
   * {@link state}, a failed migration naming the revision (`VALIDATION`): what a history replay
   * answers for the revision it stands on.
   */
  answer(): S {
    try {
      return this.state;
    } catch (e) {
      throw e instanceof StateSyncError ? withRevision(e, this.revision) : e;
    }
  }

  /** Whether the log is at an older version of the model than this one. */
  get legacy(): boolean {
    return this.logModel !== this.model;
  }

  protected genesis(logEntry: LogEntry, entry: GenesisEntry): StepResult {
    const model = logModelOf(this.model, entry);
    if (model instanceof StateSyncError) return this.stall(model, logEntry);
    const error = this.migrationError(model.initial, model, logEntry.revision);
    if (error) return this.stall(error, logEntry);
    this.setLogModel(model, model.initial);
    this.validity.reset(false); // the first checked command checks the whole state once
    this.switchedFrom = undefined;
    this.anchored = true;
    this.lastStart = logEntry.revision;
    this.advance(logEntry, "genesis", entry.ts);
    return { kind: "applied", entry };
  }

  /**
   * A genesis entry of a shared stream's key after the state here (see `Replay.step`): the
   * model's initial state at its revision, as a fresh replica has it; reported as `TRUNCATED`
   * (an event, not a stop: the entries before it were purged).
   */
  protected restart(logEntry: LogEntry, entry: GenesisEntry): StepResult {
    const from = this.revision;
    this.setRecent(undefined);
    this.origins = new Origins(undefined);
    const result = this.genesis(logEntry, entry);
    if (result.kind !== "applied") return result;
    const error = new StateSyncError(
      "TRUNCATED",
      `the state started again from a genesis entry at revision ${logEntry.revision}: the log's entries of it up to revision ${from} were purged (or a genesis entry was published by hand), and the state is the model's initial state again`,
      { details: { restartedAt: logEntry.revision, from } },
    );
    return { ...result, error: withRevision(error, logEntry.revision) };
  }

  /** A snapshot or switch entry: the state at its revision, whatever came before. */
  protected jump(logEntry: LogEntry, entry: SnapshotEntry | SwitchEntry): StepResult {
    const model = logModelOf(this.model, entry);
    if (model instanceof StateSyncError) return this.stall(model, logEntry);
    const valid = safeParse(model.state, entry.state);
    const problem = valid.success ? findNonJson(entry.state) : carriedStateRefusal(valid.error);
    if (problem !== undefined) {
      const error = new StateSyncError(
        "CORRUPT_ENTRY",
        `${entry.kind} entry is invalid: ${problem}`,
      );
      const needed = !this.anchored || (this.contiguous && logEntry.revision !== this.revision + 1);
      return needed ? this.stall(error, logEntry) : this.skip(logEntry, error);
    }
    const state = deepFreeze(entry.state);
    const error = this.migrationError(state, model, logEntry.revision);
    if (error) return this.stall(error, logEntry);
    const kept = this.keptOver(logEntry, entry, model);
    this.setLogModel(model, state);
    this.validity.reset(true); // checked above
    // Snapshot entries carry it too, so a replica that starts after a compaction (or from a
    // local snapshot) reads a command without `mv` as a replica that saw the switch does.
    this.switchedFrom = entry.from;
    this.anchored = true;
    this.setRecent(usableRecent(entry.recent, entry.base));
    this.origins = new Origins(entry.origins);
    this.lastStart = logEntry.revision;
    this.advance(logEntry, entry.kind, entry.ts);
    if (kept === undefined) return { kind: "applied", entry };
    const reset = new StateSyncError(
      "TRUNCATED",
      `the log was started again from the model's initial state at revision ${logEntry.revision} by a replica that opened it with nothing retained (its whole stream was purged); this replica held the state at revision ${kept.from} (a replica that compacts writes it back; one opened with compaction: false does not, and the state stays reset)`,
      { details: { restartedAt: logEntry.revision, from: kept.from, held: true } },
    );
    return { kind: "applied", entry, kept, error: reset };
  }

  /**
   * The state here, when `entry` is a re-anchoring over it (see {@link KeptOverReset}): a
   * snapshot entry right after this revision and based on it, of the model's initial state with
   * no recent ids or origins (what `FirstEntry.reanchor` writes), while the state here is another.
   * An ordinary compaction based here holds the state here (replicas are deterministic).
   */
  private keptOver(
    logEntry: LogEntry,
    entry: SnapshotEntry | SwitchEntry,
    model: Model<any, any>,
  ): KeptOverReset | undefined {
    if (entry.kind !== "snapshot" || !this.anchored || !this.contiguous) return undefined;
    if (entry.base !== this.revision || logEntry.revision !== this.revision + 1) return undefined;
    if (model !== this.logModel || (entry.recent?.length ?? 0) > 0 || entry.origins)
      return undefined;
    if (!jsonEqual(entry.state, model.initial) || jsonEqual(this.logState, model.initial)) {
      return undefined;
    }
    return {
      at: logEntry.revision,
      from: this.revision,
      state: this.logState,
      model,
      recent: this.recentForSnapshot(),
      switchedFrom: this.switchedFrom,
      origins: this.origins.size > 0 ? this.origins.toRows() : undefined,
    };
  }

  /**
   * Consumes this writer's own conditional entry without replaying it: `state` is what its
   * recipes produced on the current state, which the log confirmed by storing the entry right
   * after it (so replaying its patches would give an equal state). Only when the entry is the
   * next one (`base` is the current revision, and in a contiguous log it is `revision + 1`).
   * Returns false, changing nothing, otherwise. `patches`: the entry's, where they changed the
   * state (see `StateValidity`; unknown without them).
   */
  adopt(
    logEntry: LogEntry,
    base: number,
    ts: number,
    state: S,
    origin?: [string, number] | undefined,
    patches?: UpdateEntry["patches"],
  ): boolean {
    if (!this.anchored || base !== this.revision || logEntry.revision <= this.revision) {
      return false;
    }
    if (this.contiguous && logEntry.revision !== this.revision + 1) return false;
    if (this.legacy) return false; // a writer switches the log to its version first
    if (this.collecting) return false; // waiting for a chunked snapshot: the state is stale
    if (this.origins.isDuplicate(origin)) return false; // consumed without effect, by `step`
    this.logState = state;
    if (patches) this.validity.notePatches(patches);
    else this.validity.unknown();
    this.origins.note(origin, logEntry.revision);
    this.advance(logEntry, "update", ts);
    return true;
  }

  /** Stands on the batch `run` (from `entries[i]` on) applied as `state`; the index after it. */
  protected adoptBatch(
    entries: readonly LogEntry[],
    i: number,
    run: readonly BatchItem[],
    { state, preferredRun }: { state: unknown; preferredRun: number | undefined },
    results: StepResult[],
  ): number {
    this.logState = state;
    if (preferredRun !== undefined) this.preferredRun = preferredRun;
    for (const item of run) {
      this.origins.note(item.entry.origin, item.revision);
      this.advance(entries[i]!, item.entry.kind, item.entry.ts);
      results.push({ kind: "applied", entry: item.entry });
      i += 1;
    }
    return i;
  }

  /** Whether entries are held while waiting for a chunked snapshot (`Replay`). */
  protected get collecting(): boolean {
    return false;
  }

  protected setLogModel(model: Model<any, any>, state: unknown): void {
    this.logModel = model;
    this.logState = state;
    if (this.view?.logState !== state) this.view = undefined;
  }

  /**
   * While the log is at an older version: the error migrating `state` (of `model`) up to this
   * model, or undefined (the migrated state is kept for `revision`). The replay then stops before
   * the entry instead of standing on a revision it cannot show (found by a fresh-eyes trial: a
   * stalled replica had moved to the revision whose state failed to migrate).
   */
  protected migrationError(
    state: unknown,
    model: Model<any, any>,
    revision: number,
  ): StateSyncError | undefined {
    if (model === this.model || !this.checkMigrations) return undefined;
    try {
      this.view = { revision, logState: state, state: migrateUp(this.model, model, state) };
      return undefined;
    } catch (e) {
      return e instanceof StateSyncError
        ? e
        : new StateSyncError("VALIDATION", `migrating failed: ${String(e)}`, { cause: e });
    }
  }

  protected advance(logEntry: LogEntry, kind: Entry["kind"] | undefined, ts = 0): void {
    this.revision = logEntry.revision;
    this.messageId = logEntry.messageId;
    this.lastKind = kind;
    if (logEntry.messageId !== undefined) {
      this.recent.push(logEntry.messageId, logEntry.revision, ts);
    }
  }

  /** Replaces the recent message ids with a starting point's `recent` list. */
  protected setRecent(recent: ReadonlyArray<readonly [string, number, number]> | undefined): void {
    this.recent.clear();
    for (const [id, revision, ts] of recent ?? []) this.recent.push(id, revision, ts, false);
  }

  /** See {@link RecentIds.recordedFrom}: the record has every entry with an id from it on. */
  get recordedFrom(): number {
    return this.recent.recordedFrom;
  }

  /** The revision at which an entry with `messageId` was consumed recently, if it was. */
  recentRevisionOf(messageId: string): number | undefined {
    return this.recent.revisionOf(messageId);
  }

  /**
   * The `recent` list a snapshot entry carries: the last {@link MAX_RECENT} entries with message
   * ids, by revision. Never filtered by time: the writers' and the compactor's clocks need not
   * agree (issue 10, case 2). It names every such entry from its oldest one on.
   */
  recentForSnapshot(): Array<[string, number, number]> {
    return this.recent.last(MAX_RECENT);
  }

  protected skip(logEntry: LogEntry, error: StateSyncError): StepResult {
    this.advance(logEntry, undefined);
    return { kind: "skipped", error: withRevision(error, logEntry.revision) };
  }

  protected stall(error: StateSyncError, logEntry: LogEntry): StepResult {
    return { kind: "stall", error: withRevision(error, logEntry.revision) };
  }

  /** `TRUNCATED` for a conditional entry at `at` based past this revision (shared layout). */
  protected missedBefore(at: number, base: number): StateSyncError {
    return new StateSyncError(
      "TRUNCATED",
      `the conditional entry at revision ${at} is based on revision ${base}, past this key's last entry the replica read (${this.revision}): the log no longer holds the key's entries after ${this.revision} (purged or deleted), or the entry was not written by a conditional append; no snapshot entry follows`,
      { details: { after: this.revision, next: at, base } },
    );
  }

  /**
   * `TRUNCATED` of a gap after this revision before the entry at `next`; with no state yet, of
   * a log read up to `next` that holds no start (`UnanchoredReads.noStart`: it names what the
   * log lacks before the entries read, and the way out; a trial saw only "no longer holds", with
   * no hint of the cause, which is what an operator's purge followed by a write leaves).
   */
  protected truncated(next: number): StateSyncError {
    if (!this.anchored) return this.reads.noStart(next);
    return new StateSyncError(
      "TRUNCATED",
      `the log no longer holds the entries after revision ${this.revision} and no snapshot entry follows (next retained: ${next})`,
      { details: { after: this.revision, next } },
    );
  }
}

/** A copy of `error` whose message and details name the entry's revision. */
export function withRevision(error: StateSyncError, revision: number): StateSyncError {
  if (error.details.revision === revision) return error;
  return new StateSyncError(error.code, `${error.message} (entry at revision ${revision})`, {
    cause: error.cause ?? error,
    details: { ...error.details, revision },
  });
}
