import { freeze } from "immer";
import { applyBatch, applyEntry, batchItem, type BatchItem } from "./apply.js";
import {
  decodeEntry,
  MAX_RECENT,
  type DecodeResult,
  type Entry,
  type GenesisEntry,
  type SnapshotEntry,
  type SwitchEntry,
} from "./entry.js";
import { StateSyncError } from "./errors.js";
import { RecentIds } from "./recent-ids.js";
import { findNonJson } from "./json.js";
import type { LogEntry } from "./log.js";
import type { CommandMap, Model } from "./model.js";
import { commandForLog, logModelOf, migrateUp, modelOfVersion, writerVersion } from "./versions.js";

/** What one {@link Replay.step} did. */
export type StepResult =
  /** Already consumed (revision not above the current one): nothing happened. */
  | { kind: "ignored" }
  /** Consumed and applied (or a no-op whose command failed: `error` is set). */
  | { kind: "applied"; entry: Entry; error?: StateSyncError }
  /** Consumed without effect because it is malformed (every replica skips it alike). */
  | { kind: "skipped"; error: StateSyncError }
  /** Not consumed: the replica must stop before it. */
  | { kind: "stall"; error: StateSyncError };

/**
 * The deterministic core of a replica: a state, the revision it is at, and the rules that move
 * it along the log (Pravega's `Revisioned` state plus its update loop). Pure: two replays fed
 * the same entries end in the same place. The synchronizer wraps one; `stateAt` runs another.
 *
 * Continuity: in a contiguous log the entry after r must be r + 1; in a shared stream a
 * conditional entry must be based on r. A gap is accepted only onto a snapshot entry (compaction);
 * otherwise the replay stalls with `TRUNCATED`. The first entry consumed must be the genesis
 * entry or a snapshot entry.
 *
 * Versions (docs/versions.md): the log is at the model version of its last genesis, snapshot or
 * switch entry. While that is an older version of the model's chain (`legacy`), entries are
 * replayed with that version's model and `state` is the log's state migrated up (a view); an
 * entry of a version newer than the model stops the replay with `MODEL_UPGRADED`. Every rule
 * depends only on the log, so replicas of different versions that read an entry agree on it or
 * one of them stops.
 */
export class Replay<S, C extends CommandMap<S>> {
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
  /** Message ids, revisions and timestamps of entries consumed recently (see `MAX_RECENT`). */
  private recent = new RecentIds(2 * MAX_RECENT);

  private view: { revision: number; logState: unknown; state: S } | undefined;

  constructor(
    private readonly model: Model<S, C>,
    private readonly contiguous: boolean,
    from?: {
      state: unknown;
      revision: number;
      messageId?: string | undefined;
      version?: number;
      switchedFrom?: number | undefined;
    },
  ) {
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

  /** Whether the log is at an older version of the model than this one. */
  get legacy(): boolean {
    return this.logModel !== this.model;
  }

  /**
   * Consumes one entry read from the log. `predecoded`, when given, must be `decodeEntry` of exactly
   * `logEntry.data` (a writer passes what it decoded while preparing its own entry).
   */
  step(logEntry: LogEntry, predecoded?: DecodeResult): StepResult {
    if (logEntry.revision <= this.revision) return { kind: "ignored" };
    const gap = this.contiguous && this.anchored && logEntry.revision !== this.revision + 1;
    const decoded = predecoded ?? decodeEntry(logEntry.data);
    if (!decoded.ok) {
      if (decoded.error.code === "UNSUPPORTED_FORMAT" || gap) {
        return this.stall(gap ? this.truncated(logEntry.revision) : decoded.error, logEntry);
      }
      return this.skip(logEntry, decoded.error);
    }
    const entry = decoded.entry;
    if (entry.kind === "snapshot" || entry.kind === "switch") return this.jump(logEntry, entry);
    if (gap || !this.anchored) {
      if (entry.kind === "genesis" && !this.anchored) return this.genesis(logEntry, entry);
      return this.stall(this.truncated(logEntry.revision), logEntry);
    }
    if (entry.kind === "genesis") {
      return this.skip(logEntry, new StateSyncError("CORRUPT_ENTRY", "a second genesis entry"));
    }
    if (entry.kind === "intent") {
      this.advance(logEntry, "intent", entry.ts);
      return { kind: "applied", entry };
    }
    if (entry.kind === "update" && entry.base !== this.revision) {
      if (!this.contiguous) return this.stall(this.truncated(logEntry.revision), logEntry);
      return this.skip(
        logEntry,
        new StateSyncError(
          "CORRUPT_ENTRY",
          `conditional entry based on ${entry.base}, not ${this.revision}`,
        ),
      );
    }
    let applied: Entry = entry;
    if (entry.kind === "command") {
      const call = commandForLog(this.logModel, this.switchedFrom, entry);
      if (call instanceof StateSyncError) return this.skip(logEntry, call);
      applied = call;
    }
    const outcome = applyEntry(this.logModel, this.logState, applied, this.revision);
    if (outcome.kind === "stall") return this.stall(outcome.error, logEntry);
    if (outcome.kind === "applied") {
      const error = this.migrationError(outcome.state, this.logModel, logEntry.revision);
      if (error) return this.stall(error, logEntry);
      this.logState = outcome.state;
    }
    this.advance(logEntry, entry.kind, entry.ts);
    return outcome.kind === "noop"
      ? { kind: "applied", entry, error: withRevision(outcome.error, logEntry.revision) }
      : { kind: "applied", entry };
  }

  /**
   * Consumes entries in order, like {@link step} on each (same results), but applies each run of
   * consecutive plain entries (updates and known commands that continue the revision chain) in one
   * Immer draft: a long catch-up no longer copies the containers it touches once per entry. Stops
   * after a stall. `decoded[i]`, when given, is `decodeEntry` of `entries[i].data` (the array is
   * filled in as entries get decoded). `produced[i]`, when given, is the state this writer's
   * recipes produced for its own update `entries[i]` from the state at `base`: it is adopted
   * instead of replaying the patches when the replay stands at `base` (see {@link adopt}).
   */
  stepMany(
    entries: readonly LogEntry[],
    decoded: Array<DecodeResult | undefined> = [],
    produced: ReadonlyArray<{ readonly base: number; readonly state: unknown } | undefined> = [],
  ) {
    const results: StepResult[] = [];
    let i = 0;
    while (i < entries.length) {
      const own = produced[i];
      const d = decoded[i];
      if (own && d?.ok && d.entry.kind === "update") {
        // This writer's own update: adopt what its recipes produced (see `adopt`), or step it.
        if (!this.adopt(entries[i]!, own.base, d.entry.ts, own.state as S)) {
          const result = this.step(entries[i]!, d);
          results.push(result);
          if (result.kind === "stall") return results;
        } else results.push({ kind: "applied", entry: d.entry });
        i += 1;
        continue;
      }
      const run = this.plainRun(entries, decoded, i, produced);
      if (run.length > 0) {
        const state = applyBatch(this.logModel, this.logState, run, this.revision);
        if (state !== undefined) {
          this.logState = state;
          for (const item of run) {
            this.advance(entries[i]!, item.entry.kind, item.entry.ts);
            results.push({ kind: "applied", entry: item.entry });
            i += 1;
          }
          continue;
        }
      }
      // One by one: an entry that is not plain, or a run in which an entry failed.
      const end = i + Math.max(1, run.length);
      for (; i < end; i++) {
        const result = this.step(entries[i]!, decoded[i]);
        results.push(result);
        if (result.kind === "stall") return results;
      }
    }
    return results;
  }

  /** The plain entries from `entries[start]` on, as they would chain from the current revision. */
  private plainRun(
    entries: readonly LogEntry[],
    decoded: Array<DecodeResult | undefined>,
    start: number,
    produced: readonly unknown[],
  ): BatchItem[] {
    const run: BatchItem[] = [];
    // An older log version is replayed entry by entry: each state must migrate (`step`).
    if (!this.anchored || this.legacy) return run;
    let revision = this.revision;
    for (let i = start; i < entries.length; i++) {
      const logEntry = entries[i]!;
      if (logEntry.revision <= revision || (i > start && produced[i] !== undefined)) break;
      if (this.contiguous && logEntry.revision !== revision + 1) break;
      const d = (decoded[i] ??= decodeEntry(logEntry.data));
      if (!d.ok || (d.entry.kind === "update" && d.entry.base !== revision)) break;
      if (
        d.entry.kind === "command" &&
        writerVersion(d.entry, this.logModel, this.switchedFrom) !== this.logModel.version
      )
        break;
      const item = batchItem(this.logModel, d.entry, logEntry.revision);
      if (item === undefined) break;
      run.push(item);
      revision = logEntry.revision;
    }
    return run;
  }

  private genesis(logEntry: LogEntry, entry: GenesisEntry): StepResult {
    const model = logModelOf(this.model, entry);
    if (model instanceof StateSyncError) return this.stall(model, logEntry);
    const error = this.migrationError(model.initial, model, logEntry.revision);
    if (error) return this.stall(error, logEntry);
    this.setLogModel(model, model.initial);
    this.switchedFrom = undefined;
    this.anchored = true;
    this.advance(logEntry, "genesis", entry.ts);
    return { kind: "applied", entry };
  }

  /** A snapshot or switch entry: the state at its revision, whatever came before. */
  private jump(logEntry: LogEntry, entry: SnapshotEntry | SwitchEntry): StepResult {
    const model = logModelOf(this.model, entry);
    if (model instanceof StateSyncError) return this.stall(model, logEntry);
    const valid = model.state.safeParse(entry.state);
    const problem = valid.success ? findNonJson(entry.state) : "it fails the state schema";
    if (problem !== undefined) {
      const error = new StateSyncError(
        "CORRUPT_ENTRY",
        `${entry.kind} entry is invalid: ${problem}`,
      );
      const needed = !this.anchored || (this.contiguous && logEntry.revision !== this.revision + 1);
      return needed ? this.stall(error, logEntry) : this.skip(logEntry, error);
    }
    const state = freeze(entry.state, true);
    const error = this.migrationError(state, model, logEntry.revision);
    if (error) return this.stall(error, logEntry);
    this.setLogModel(model, state);
    // Snapshot entries carry it too, so a replica that starts after a compaction (or from a
    // local snapshot) reads a command without `mv` as a replica that saw the switch does.
    this.switchedFrom = entry.from;
    this.anchored = true;
    this.recent.clear();
    for (const [id, revision, ts] of entry.recent ?? []) this.recent.push(id, revision, ts);
    this.advance(logEntry, entry.kind, entry.ts);
    return { kind: "applied", entry };
  }

  private setLogModel(model: Model<any, any>, state: unknown): void {
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
  private migrationError(
    state: unknown,
    model: Model<any, any>,
    revision: number,
  ): StateSyncError | undefined {
    if (model === this.model) return undefined;
    try {
      this.view = { revision, logState: state, state: migrateUp(this.model, model, state) };
      return undefined;
    } catch (e) {
      return e instanceof StateSyncError
        ? e
        : new StateSyncError("VALIDATION", `migrating failed: ${String(e)}`, { cause: e });
    }
  }

  private advance(logEntry: LogEntry, kind: Entry["kind"] | undefined, ts = 0): void {
    this.revision = logEntry.revision;
    this.messageId = logEntry.messageId;
    this.lastKind = kind;
    if (logEntry.messageId !== undefined) {
      this.recent.push(logEntry.messageId, logEntry.revision, ts);
    }
  }

  /**
   * Consumes this writer's own conditional entry without replaying it: `state` is what its
   * recipes produced on the current state, which the log confirmed by storing the entry right
   * after it (so replaying its patches would give an equal state). Only when the entry is the
   * next one (`base` is the current revision, and in a contiguous log it is `revision + 1`).
   * Returns false, changing nothing, otherwise.
   */
  adopt(logEntry: LogEntry, base: number, ts: number, state: S): boolean {
    if (!this.anchored || base !== this.revision || logEntry.revision <= this.revision) {
      return false;
    }
    if (this.contiguous && logEntry.revision !== this.revision + 1) return false;
    if (this.legacy) return false; // a writer switches the log to its version first
    this.logState = state;
    this.advance(logEntry, "update", ts);
    return true;
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

  private skip(logEntry: LogEntry, error: StateSyncError): StepResult {
    this.advance(logEntry, undefined);
    return { kind: "skipped", error: withRevision(error, logEntry.revision) };
  }

  private stall(error: StateSyncError, logEntry: LogEntry): StepResult {
    return { kind: "stall", error: withRevision(error, logEntry.revision) };
  }

  private truncated(next: number): StateSyncError {
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
