import type { Immutable } from "immer";
import { abortError } from "../backoff.js";
import { CommandFailures } from "./command-failures.js";
import type { DecodeResult, UpdateEntry } from "../entry.js";
import { StateSyncError } from "../errors.js";
import type { LogEntry } from "../log.js";
import type { CommandMap, Model } from "../model.js";
import { Replay, type StepResult } from "../replay.js";
import type { SyncStats } from "../synchronizer-types.js";
import type { OwnEntries, OwnEntry } from "./own-entries.js";
import type { Origins } from "../pending/origins.js";
import type { StatusHub } from "./status.js";
import { whenAborted } from "../abort-watch.js";
import { RevisionWaiters, type Waiter } from "./revision-waiters.js";

/** Entries the replica consumed together, with what each did, in log order. */
export interface AppliedBatch {
  readonly entries: readonly LogEntry[];
  readonly results: readonly StepResult[];
  /** `mine[i]`: entry i was appended by this replica. */
  readonly mine: readonly boolean[];
}

/**
 * The replica: the state and the revision it is at (a {@link Replay}), the callers waiting for a
 * revision, and the subscribers. The one owner of these (after automerge-repo's
 * `Document.applyMutation`): every change of state goes through `consume`, `adopt` or `reset`,
 * and each of them also notifies, so no caller forgets to.
 *
 * Invariants:
 * 1. The revision only grows, except through `reset` (a discarded snapshot).
 * 2. `consume` is synchronous: two batches never interleave.
 * 3. After every change, waiters at or below the revision are resolved, and subscribers are
 *    called once per microtask with the state and revision as they are then.
 * 4. Every consumed batch is announced once to the `applied` listeners (snapshots, compaction,
 *    contention) before waiters resolve, in log order; a stall announces the entries before it.
 */
export class Replica<S, C extends CommandMap<S>> {
  private replay: Replay<S, C>;
  private readonly waiters = new RevisionWaiters();
  private readonly subscribers = new Set<(state: Immutable<S>, revision: number) => void>();
  private readonly appliedListeners: Array<(batch: AppliedBatch) => void> = [];
  private notifyScheduled = false;
  /** The no-op errors of the last commands that failed (`commandFailure`). */
  private readonly failures = new CommandFailures();

  constructor(
    private readonly model: Model<S, C>,
    private readonly contiguous: boolean,
    private readonly status: StatusHub,
    private readonly stats: SyncStats,
    private readonly own: OwnEntries,
  ) {
    this.replay = new Replay(model, contiguous);
    this.replay.scanForStart = true;
    status.onStall((error) => {
      for (const w of this.waiters.takeAll()) w.reject(error);
    });
  }

  /** The last state this model could see (kept when migrating a newer log state fails). */
  private lastView: S | undefined;

  /**
   * The state as this model sees it: while the log is at an older model version, the log's state
   * migrated up (see `Replay.state`); the last one that migrated when a migration fails.
   */
  get state(): Immutable<S> {
    if (!this.replay.legacy) return this.replay.state as Immutable<S>;
    try {
      this.lastView = this.replay.state;
    } catch {
      // reported as a stall by `consume`; reads keep the last state that migrated
    }
    return (this.lastView ?? this.model.initial) as Immutable<S>;
  }
  /** The state migrated to this model's version now; throws `VALIDATION` when that fails. */
  migratedState(): S {
    return this.replay.state;
  }
  /** Whether the log is at an older version of the model (see `Replay.legacy`). */
  get legacy(): boolean {
    return this.replay.legacy;
  }
  /** The model of the version the log is at. */
  get logModel(): Model<any, any> {
    return this.replay.logModel;
  }
  /** The version the log was at before its last switch (what snapshots carry along). */
  get switchedFrom(): number | undefined {
    return this.replay.switchedFrom;
  }
  /** The state in the shape of the log's model version (what a snapshot entry of it carries). */
  get logState(): unknown {
    return this.replay.logState;
  }
  get revision(): number {
    return this.replay.revision;
  }
  /** The last revision read (past `revision` while entries wait for a chunked snapshot). */
  get readPosition(): number {
    return this.replay.readPosition;
  }
  /** See {@link Replay.lastStart}. */
  get lastStart(): number | undefined {
    return this.replay.lastStart;
  }
  /** See {@link Replay.verifiedStart}: where a compaction may truncate. */
  verifiedStart(): number | undefined {
    return this.replay.verifiedStart();
  }
  /** Whether the replica stands on a genesis entry, a snapshot entry or a restored snapshot. */
  get anchored(): boolean {
    return this.replay.anchored;
  }

  private rangeReading = false;

  /** Whether a range read runs: a gap is then read past to a starting point (`Replay.scanGaps`). */
  readingRange(on: boolean): void {
    this.rangeReading = on;
    this.replay.scanGaps = on;
  }

  /** See {@link Replay.neverStarted}: a log of one state that never had a starting point. */
  get neverStarted(): boolean {
    return this.replay.neverStarted;
  }
  /** `TRUNCATED` when the log read so far holds no entry to start from (`Replay.unusableStart`). */
  get unusableStart(): StateSyncError | undefined {
    return this.replay.unusableStart;
  }
  /** Entries a catch-up should hand to `consume` together (`applyBatch`'s suggestion). */
  get preferredRun(): number {
    return this.replay.preferredRun;
  }
  /** Message id of the entry at `revision`. */
  get messageId(): string | undefined {
    return this.replay.messageId;
  }
  /** Kind of the entry at `revision` (undefined after a restore). */
  get lastKind() {
    return this.replay.lastKind;
  }
  /** See {@link Replay.recordedFrom}. */
  get recordedFrom(): number {
    return this.replay.recordedFrom;
  }
  /** See {@link Replay.recentRevisionOf}. */
  recentRevisionOf(messageId: string): number | undefined {
    return this.replay.recentRevisionOf(messageId);
  }
  /** The table of applied origins (`pending/origins.ts`), as it stands at `revision`. */
  get origins(): Origins {
    return this.replay.origins;
  }
  /** See {@link Replay.recentForSnapshot}. */
  recentForSnapshot() {
    return this.replay.recentForSnapshot();
  }

  /** Starts over from `from` (a restored snapshot, of model version `version`) or from nothing. */
  reset(from?: {
    state: unknown;
    revision: number;
    messageId?: string | undefined;
    version?: number;
    switchedFrom?: number | undefined;
    origins?: ReadonlyArray<readonly [string, number, number]> | undefined;
  }): void {
    this.replay = new Replay(this.model, this.contiguous, from);
    this.replay.scanForStart = true;
    this.replay.scanGaps = this.rangeReading;
    this.scheduleNotify();
  }

  /** Subscribes to each consumed batch (internal parts). */
  onApplied(listener: (batch: AppliedBatch) => void): void {
    this.appliedListeners.push(listener);
  }

  /**
   * Consumes entries read from the log, in order (a catch-up hands over a whole batch, which the
   * replay applies in one Immer draft). Entries at or below the revision are ignored.
   */
  consume(entries: readonly LogEntry[]): void {
    if (this.status.stopped) return;
    const fresh: LogEntry[] = [];
    const decoded: Array<DecodeResult | undefined> = [];
    const produced: Array<OwnEntry["produced"]> = [];
    for (const entry of entries) {
      if (entry.revision <= this.readPosition) continue;
      this.stats.entriesFetched += 1;
      this.stats.bytesFetched += entry.data.byteLength;
      fresh.push(entry);
      const own = this.own.take(entry);
      decoded.push(own?.decoded);
      if (own?.produced) produced[fresh.length - 1] = own.produced;
    }
    if (fresh.length === 0) return;
    const mine = decoded.map((d) => d !== undefined); // decoded in advance: own entries
    // An own update read back before its acknowledgement (the follower is often first) is
    // adopted with the state its recipes produced, not replayed (issue 8).
    let before = this.revision;
    const results = this.replay.stepMany(fresh, decoded, produced);
    let stall: StateSyncError | undefined;
    for (let i = 0; i < results.length; i++) {
      const result = results[i]!;
      if (result.kind === "stall") stall = result.error;
      else this.count(result);
      if (result.kind === "applied" || result.kind === "skipped") {
        const e = result.kind === "applied" ? result.entry : undefined;
        // A starting point past entries never applied here (truncated before it); or the key
        // started again from a genesis entry (the shared layout: its entries were purged).
        if (e?.kind === "snapshot" || e?.kind === "switch") this.failures.passOver(before, e.base);
        if (e?.kind === "genesis") this.failures.passOver(before, fresh[i]!.revision - 1);
        before = fresh[i]!.revision;
      }
    }
    const consumed = stall ? results.length - 1 : results.length;
    if (consumed > 0) {
      // Copies only after a stall: this runs per entry for a live follower.
      const all = consumed === fresh.length;
      this.announce({
        entries: all ? fresh : fresh.slice(0, consumed),
        results: stall ? results.slice(0, consumed) : results,
        mine: all ? mine : mine.slice(0, consumed),
      });
    }
    if (stall) return this.status.stall(stall);
    if (this.replay.legacy) {
      try {
        this.lastView = this.replay.state; // the migrated view, once per batch
      } catch (e) {
        this.status.stall(e as StateSyncError); // every replica of this version stops alike
      }
    }
  }

  /** Counts and reports what one step did (and what a loaded chunked snapshot replayed). */
  private count(result: StepResult): void {
    if (result.kind === "skipped") {
      this.stats.entriesSkipped += 1;
      this.status.report(result.error);
    } else if (result.kind === "pending") {
      if (result.error) this.status.report(result.error);
    } else if (result.kind === "applied") {
      const kind = result.entry.kind;
      if (kind === "update" || kind === "command" || kind === "commands") {
        this.stats.entriesApplied += 1;
      }
      // (No array per entry: this runs for every entry of a catch-up.)
      if (result.error) this.noted(result.error, kind);
      else if (result.failures) for (const error of result.failures) this.noted(error, kind);
      if (result.replayed)
        for (const r of result.replayed) if (r.result.kind !== "stall") this.count(r.result);
    }
  }

  /** Reports an entry's no-op error and keeps a command's failure for its caller. */
  private noted(error: StateSyncError, kind: string): void {
    this.status.report(error);
    if (kind.startsWith("command") && error.code === "COMMAND_FAILED") this.failures.note(error);
  }

  /**
   * Consumes this replica's own conditional entry with the state its recipes produced (see
   * {@link Replay.adopt}); false when the replica is not at `base` any more (then the entry comes
   * through `consume`).
   */
  adopt(entry: LogEntry, update: UpdateEntry, state: S): boolean {
    if (
      this.status.stopped ||
      !this.replay.adopt(entry, update.base, update.ts, state, update.origin, update.patches)
    ) {
      return false;
    }
    this.own.take(entry);
    this.stats.entriesApplied += 1;
    const result: StepResult = { kind: "applied", entry: update };
    this.announce({ entries: [entry], results: [result], mine: [true] });
    return true;
  }

  /**
   * The `COMMAND_FAILED` error of the command at `index` of the entry at `revision` (0 for a
   * `command` entry) when this replica consumed it as a no-op; see `CommandFailures.get`.
   */
  commandFailure(revision: number, index = 0): StateSyncError | undefined {
    return this.failures.get(revision, index);
  }

  /**
   * Whether this replica reached a state past `revision` without applying its entry (a snapshot
   * entry after a truncation, while a command sent from here was in flight).
   */
  passedOver(revision: number): boolean {
    return this.failures.passedOver(revision);
  }

  /** Keeps the failures of commands sent from now on (see `CommandFailures.watch`). */
  watchFailures(): () => void {
    return this.failures.watch(this.revision);
  }

  private announce(batch: AppliedBatch): void {
    for (const l of this.appliedListeners) l(batch);
    for (const w of this.waiters.takeUpTo(this.revision)) w.resolve();
    this.scheduleNotify();
  }

  /**
   * Resolves true once `revision` is consumed; false after `ms`, when the replica stops, or as
   * soon as `signal` aborts (an update's wait ends at once: `engine/wait-limits.ts`).
   */
  waitUntil(revision: number, ms: number, signal?: AbortSignal): Promise<boolean> {
    if (this.revision >= revision) return Promise.resolve(true);
    if (this.status.stopped || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (value: boolean) => {
        clearTimeout(timer);
        stop?.();
        this.waiters.delete(waiter);
        resolve(value);
      };
      const onAbort = () => done(false);
      const waiter: Waiter = { revision, resolve: () => done(true), reject: onAbort };
      const timer = setTimeout(onAbort, ms);
      const stop = signal && whenAborted(signal, onAbort);
      this.waiters.add(waiter);
    });
  }

  /**
   * Resolves once `revision` is consumed; rejects with the stall, `CLOSED` or `ABORTED`. Called
   * after the stall or close (a caller that awaited something first), it rejects at once: the
   * waiters were rejected before it came, and it would never settle (a fresh-eyes trial:
   * `waitFor` on a shared key whose replica stalled while it asked the log where it stands).
   */
  waitFor(revision: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.revision >= revision) return Promise.resolve();
    if (this.status.stopped) return Promise.reject(this.status.endError());
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(abortError(signal));
      const onAbort = () => {
        this.waiters.delete(waiter);
        reject(abortError(signal!));
      };
      const waiter: Waiter = {
        revision,
        resolve: () => {
          stop?.();
          resolve();
        },
        reject: (e) => {
          stop?.();
          reject(e);
        },
      };
      const stop = signal && whenAborted(signal, onAbort);
      this.waiters.add(waiter);
    });
  }

  /** Rejects every waiter with `error` (on close). */
  rejectWaiters(error: StateSyncError): void {
    for (const w of this.waiters.takeAll()) w.reject(error);
  }

  subscribe(listener: (state: Immutable<S>, revision: number) => void): () => void {
    if (typeof listener !== "function") {
      throw new StateSyncError("VALIDATION", "listener must be a function");
    }
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  private scheduleNotify(): void {
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    queueMicrotask(() => {
      this.notifyScheduled = false;
      this.status.notify(this.subscribers, this.state, this.revision);
    });
  }
}
