import { freeze } from "immer";
import { applyBatch, applyEntry, batchItem, type BatchItem } from "./apply.js";
import { ChunkCollector } from "./chunk-collector.js";
import { assembledState, type PartAssembly } from "./chunked.js";
import {
  decodeEntry,
  MAX_RECENT,
  type ChunkedSnapshotEntry,
  type DecodeResult,
  type Entry,
  type GenesisEntry,
  type SnapshotEntry,
  type SwitchEntry,
} from "./entry.js";
import { StateSyncError } from "./errors.js";
import { findNonJson } from "./json.js";
import type { LogEntry } from "./log.js";
import type { CommandMap, Model } from "./model.js";
import { commandForLog, logModelOf, migrateUp, modelOfVersion, writerVersion } from "./versions.js";

/** What one {@link Replay.step} did. */
export type StepResult =
  /** Already consumed (revision not above the current one): nothing happened. */
  | { kind: "ignored" }
  /**
   * Consumed and applied (or a no-op whose command failed: `error` is set). A chunked snapshot
   * entry loaded from its parts lists what replaying the entries held since them did (`replayed`).
   */
  | { kind: "applied"; entry: Entry; error?: StateSyncError; replayed?: StepResult[] }
  /**
   * Held, the revision unchanged: the replica has no state to apply it to yet and waits for a
   * chunked snapshot entry whose parts it holds (see `ChunkCollector`). `error`: a chunked
   * snapshot entry refused (malformed parts), reported, not a stop.
   */
  | { kind: "pending"; error?: StateSyncError }
  /** Consumed without effect because it is malformed (every replica skips it alike). */
  | { kind: "skipped"; error: StateSyncError }
  /** Not consumed: the replica must stop before it. */
  | { kind: "stall"; error: StateSyncError };

const PENDING: StepResult = { kind: "pending" };

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
  /**
   * Where the last starting point consumed begins, so a compaction may truncate before it: a
   * one-message snapshot or switch entry's own revision, a chunked snapshot's part 0 (undefined
   * when this replay did not see it).
   */
  lastStart: number | undefined;
  /** `[messageId, revision, timestamp]` of entries consumed recently (see `MAX_RECENT`). */
  private recent: Array<[string, number, number]> = [];
  /** Entries held while waiting for a chunked snapshot (undefined: applying as usual). */
  private collector: ChunkCollector | undefined;
  /** Revision of each part 0 consumed while applying (the last few), by snapshot id. */
  private partStarts = new Map<string, number>();

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

  /** The last revision read: `revision`, or past it while entries are held (`pending`). */
  get readPosition(): number {
    return Math.max(this.revision, this.collector?.through ?? 0);
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
    if (logEntry.revision <= this.readPosition) return { kind: "ignored" };
    const decoded = predecoded ?? decodeEntry(logEntry.data);
    if (this.collector) return this.collect(logEntry, decoded);
    const gap = this.contiguous && this.anchored && logEntry.revision !== this.revision + 1;
    if (!decoded.ok) {
      if (decoded.error.code === "UNSUPPORTED_FORMAT" || gap) {
        return this.stall(gap ? this.truncated(logEntry.revision) : decoded.error, logEntry);
      }
      return this.skip(logEntry, decoded.error);
    }
    const entry = decoded.entry;
    if (entry.kind === "part") {
      const part = entry;
      // A part after a gap, or part 0 of a state this replica is not at (the shared layout,
      // where revisions do not show gaps): the parts may be its way back.
      const missed = !this.contiguous && part.index === 0 && part.base !== this.revision;
      if (gap || !this.anchored || missed) {
        return this.startCollecting(logEntry, decoded);
      }
      if (part.index === 0) this.rememberStart(part.id, logEntry.revision);
      this.advance(logEntry, "part", part.ts);
      return { kind: "applied", entry: part };
    }
    if (entry.kind === "snapshot" && "parts" in entry) {
      if (gap || !this.anchored) return this.startCollecting(logEntry, decoded);
      // Read without a gap since its parts: the state here is already the one it names.
      this.lastStart = this.partStarts.get(entry.parts.id);
      this.advance(logEntry, "snapshot", entry.ts);
      return { kind: "applied", entry };
    }
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
   * filled in as entries get decoded).
   */
  stepMany(entries: readonly LogEntry[], decoded: Array<DecodeResult | undefined> = []) {
    const results: StepResult[] = [];
    let i = 0;
    while (i < entries.length) {
      const run = this.plainRun(entries, decoded, i);
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
  ): BatchItem[] {
    const run: BatchItem[] = [];
    // An older log version is replayed entry by entry: each state must migrate (`step`).
    if (!this.anchored || this.legacy || this.collector) return run;
    let revision = this.revision;
    for (let i = start; i < entries.length; i++) {
      const logEntry = entries[i]!;
      if (logEntry.revision <= revision) break;
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
    this.lastStart = logEntry.revision;
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
    this.recent = (entry.recent ?? []).map((r) => [...r]);
    this.lastStart = logEntry.revision;
    this.advance(logEntry, entry.kind, entry.ts);
    return { kind: "applied", entry };
  }

  private rememberStart(id: string, revision: number): void {
    this.partStarts.set(id, revision);
    if (this.partStarts.size > 8) this.partStarts.delete(this.partStarts.keys().next().value!);
  }

  private startCollecting(logEntry: LogEntry, decoded: DecodeResult): StepResult {
    this.collector = new ChunkCollector(logEntry.revision - 1);
    return this.collect(logEntry, decoded);
  }

  /**
   * An entry while waiting for a chunked snapshot (see `ChunkCollector`): parts are assembled,
   * other entries held; a genesis (unanchored), a one-message snapshot or a switch entry ends the
   * wait as usual, a chunked snapshot entry whose parts are all here ends it by loading them.
   */
  private collect(logEntry: LogEntry, decoded: DecodeResult): StepResult {
    const c = this.collector!;
    if (this.contiguous && logEntry.revision !== c.through + 1) {
      // A truncation overtook the read (invariant 1 of the collector): start over from here.
      this.collector = undefined;
      return this.step(logEntry, decoded);
    }
    if (!decoded.ok) {
      if (decoded.error.code === "UNSUPPORTED_FORMAT") return this.stall(decoded.error, logEntry);
      c.add(logEntry, decoded);
      return PENDING;
    }
    const entry = decoded.entry;
    if (entry.kind === "part") {
      c.addPart(logEntry, entry);
      return PENDING;
    }
    if (entry.kind === "snapshot" && "parts" in entry) {
      const assembly = c.take(entry.parts.id);
      if (assembly !== undefined && assembly.base === entry.base) {
        const loaded = this.loadChunked(logEntry, entry, assembly);
        if (typeof loaded !== "string") return loaded;
        c.add(logEntry, decoded);
        const error = new StateSyncError(
          "CORRUPT_ENTRY",
          `chunked snapshot entry ${entry.parts.id} is invalid: ${loaded}`,
        );
        return { kind: "pending", error: withRevision(error, logEntry.revision) };
      }
      c.add(logEntry, decoded); // its parts were truncated (or never seen): not this one
      return PENDING;
    }
    if (entry.kind === "snapshot" || entry.kind === "switch" || entry.kind === "genesis") {
      if (entry.kind !== "genesis" || !this.anchored) {
        this.collector = undefined;
        return entry.kind === "genesis"
          ? this.genesis(logEntry, entry)
          : this.jump(logEntry, entry);
      }
    }
    if (!c.assembling && !this.anchored) {
      this.collector = undefined; // nothing to wait for: as without parts
      return this.stall(this.truncated(logEntry.revision), logEntry);
    }
    c.add(logEntry, decoded);
    if (c.overflow) {
      this.collector = undefined;
      return this.stall(this.truncated(logEntry.revision), logEntry);
    }
    return PENDING;
  }

  /**
   * Loads a chunked snapshot from its assembled parts: the state at `base`, checked like a
   * one-message snapshot's (`jump`), then the entries held since part 0 replayed onto it, then
   * the snapshot entry itself. Why not (nothing changed) when the parts are unusable.
   */
  private loadChunked(
    logEntry: LogEntry,
    entry: ChunkedSnapshotEntry,
    assembly: PartAssembly,
  ): StepResult | string {
    const c = this.collector!;
    const model = logModelOf(this.model, entry);
    if (model instanceof StateSyncError) return this.stall(model, logEntry);
    const parsed = assembledState(assembly, entry.parts);
    let problem = parsed.ok ? undefined : parsed.reason;
    if (parsed.ok) {
      const valid = model.state.safeParse(parsed.value).success;
      problem = valid ? findNonJson(parsed.value) : "it fails the state schema";
    }
    if (problem !== undefined || !parsed.ok) return problem ?? "unusable";
    const state = freeze(parsed.value, true);
    const error = this.migrationError(state, model, assembly.base);
    if (error) return this.stall(error, logEntry);
    this.collector = undefined;
    this.setLogModel(model, state);
    this.switchedFrom = entry.from;
    this.anchored = true;
    this.recent = (entry.recent ?? []).map((r) => [...r]);
    this.revision = assembly.base;
    this.messageId = undefined;
    const replayed: StepResult[] = [];
    for (const p of c.pendingAfter(assembly.start - 1)) {
      const r = this.step(p.entry, p.decoded);
      replayed.push(r);
      if (r.kind === "stall") return r;
    }
    if (this.collector) return PENDING; // a gap within what was held
    this.lastStart = assembly.start;
    this.advance(logEntry, "snapshot", entry.ts);
    return { kind: "applied", entry, replayed };
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
      this.recent.push([logEntry.messageId, logEntry.revision, ts]);
      if (this.recent.length > 2 * MAX_RECENT) this.recent = this.recent.slice(-MAX_RECENT);
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
    if (this.collector) return false; // waiting for a chunked snapshot: the state is stale
    this.logState = state;
    this.advance(logEntry, "update", ts);
    return true;
  }

  /** The revision at which an entry with `messageId` was consumed recently, if it was. */
  recentRevisionOf(messageId: string): number | undefined {
    for (let i = this.recent.length - 1; i >= 0; i--) {
      if (this.recent[i]![0] === messageId) return this.recent[i]![1];
    }
    return undefined;
  }

  /**
   * The `recent` list a snapshot entry carries: the last {@link MAX_RECENT} entries with message
   * ids, by revision. Never filtered by time: the writers' and the compactor's clocks need not
   * agree (issue 10, case 2). It names every such entry from its oldest one on.
   */
  recentForSnapshot(): Array<[string, number, number]> {
    return this.recent.slice(-MAX_RECENT);
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
