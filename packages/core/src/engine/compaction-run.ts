/**
 * One compaction (see `Compactor`, compactor.ts, for the invariants): the snapshot entry, or a
 * chunked snapshot, appended at the tail, then the truncation before it. Loaded on demand at the
 * first compaction; imports types only (what it uses of the engine comes in as
 * `CompactionDeps`), and so does chunked-writer.ts, which it brings along.
 */
import type { ownStateTextProblem, TextDigest } from "../chunked.js";
import type { SnapshotEntry } from "../entry.js";
import type { isStateSyncError, StateSyncError } from "../errors.js";
import type { findJsonProblem } from "../json.js";
import type { nestedDeeperThan } from "../nesting.js";
import type { RevisionedLog } from "../log.js";
import type { CommandMap, Model } from "../model.js";
import type { randomId } from "../prng.js";
import type { CompactionResult, SyncStats } from "../synchronizer-types.js";
import type { Appender, Prepared } from "./appender.js";
import { ChunkedWriter, type ChunkedCapture, type ChunkedStart } from "./chunked-writer.js";
import type { ContendingBatch, Contention } from "./contention.js";
import type { Opener } from "./opener.js";
import type { Reader } from "./reader.js";
import type { Replica } from "./replica.js";
import type { StatusHub } from "./status.js";
import type { Writer } from "./writer.js";
import { safeParse } from "../schema-parse.js";

/** What a compaction uses of the engine's code, handed in by `Compactor`. */
export interface CompactionDeps {
  readonly StateSyncError: typeof StateSyncError;
  readonly isStateSyncError: typeof isStateSyncError;
  readonly findJsonProblem: typeof findJsonProblem;
  readonly nestedDeeperThan: typeof nestedDeeperThan;
  readonly ownStateTextProblem: typeof ownStateTextProblem;
  /** `MAX_STATE_DEPTH` (entry-limits.ts). */
  readonly maxStateDepth: number;
  readonly TextDigest: typeof TextDigest;
  readonly randomId: typeof randomId;
  /** How long an append whose outcome is unknown is re-sent, ms. */
  readonly outcomeTimeoutMs: number;
}

/** Races a snapshot entry may lose to other writers before `compact()` gives up. */
const MAX_SNAPSHOT_RACES = 100;

/** The compaction of one replica (one per `Compactor`, kept across compactions). */
export class CompactionRun<S, C extends CommandMap<S>> {
  private readonly chunked: ChunkedWriter<S, C>;
  /** The last state was too large for one entry: start with part 0 (invariant 4). */
  private expectChunked = false;
  /** The last state found within `MAX_STATE_DEPTH` (the walk is not repeated for it). */
  private shallowState: unknown;

  constructor(
    private readonly log: RevisionedLog,
    private readonly model: Model<S, C>,
    private readonly clientId: string,
    private readonly replica: Replica<S, C>,
    private readonly reader: Reader<S, C>,
    private readonly opener: Opener<S, C>,
    private readonly writer: Writer<S, C>,
    private readonly appender: Appender,
    private readonly contention: Contention<S, C>,
    private readonly status: StatusHub,
    private readonly stats: SyncStats,
    private readonly deps: CompactionDeps,
  ) {
    this.chunked = new ChunkedWriter(log.contiguous, clientId, replica, appender, deps);
  }

  /** One compaction, from the start (`Compactor.compact` joins concurrent calls). */
  async run(): Promise<CompactionResult> {
    this.status.assertUsable();
    await this.assertTruncatable();
    let written: Written | undefined;
    // A snapshot entry races every writer of a busy log: after a few lost races it announces
    // itself with an intent like any writer, and the others let it go first (issue 10, case 11).
    const batch: ContendingBatch = { conflicts: 0, announced: false, turnsWaited: 0, heldMs: 0 };
    for (let attempt = 0; written === undefined; attempt++) {
      await this.contention.beforeAttempt(batch);
      // Part 0 goes first (below): the depth is walked here, outside the pause, and the state
      // captured under it is usually this one (`checkDepth`, invariant 2).
      if (this.expectChunked) this.checkDepth(this.replica.revision, this.replica.logState);
      await this.writer.pause(true); // invariant 3
      let step: Step;
      try {
        step = await this.appendSnapshotEntry();
      } finally {
        await this.writer.pause(false);
      }
      // A chunked snapshot goes on with the writer running (invariant 4).
      if (step.kind === "chunked") written = await this.finishChunked(step.capture, step.start);
      else if (step.kind === "done") written = step;
      if (written !== undefined) break;
      if (attempt + 1 >= MAX_SNAPSHOT_RACES) {
        throw new this.deps.StateSyncError(
          "RETRY_LIMIT",
          `the snapshot entry lost ${MAX_SNAPSHOT_RACES} races to other writers`,
          { details: { attempts: attempt + 1 } },
        );
      }
      batch.conflicts += 1;
      await this.contention.afterConflict(batch, attempt);
    }
    if (written.truncateAt !== undefined) await this.truncate(written.truncateAt, written.revision);
    this.stats.compactions += 1;
    return { revision: written.revision };
  }

  /**
   * Truncates before `at`; a failure says that the snapshot entry at `revision` was written (a
   * fresh-eyes trial: a shared-stream tenant's `compact()` failed `PERMISSION_DENIED` on the purge
   * and said nothing of the entry it had appended). Same code, `details.snapshotRevision`.
   */
  private async truncate(at: number, revision: number): Promise<void> {
    try {
      await this.log.truncateBefore(at);
    } catch (e) {
      if (!this.deps.isStateSyncError(e)) throw e;
      throw new this.deps.StateSyncError(
        e.code,
        `${e.message} (the snapshot entry at revision ${revision} was written, and replicas start from it; only the truncation before it failed)`,
        { cause: e, details: { ...e.details, snapshotRevision: revision } },
      );
    }
  }

  /**
   * Throws `STREAM_CONFIG` when the log refuses truncation (a `deny_purge` stream): found before
   * the snapshot entry is written, so a refused compaction leaves the log as it was (fresh-eyes
   * trial: the entry was appended, then the purge failed).
   */
  private async assertTruncatable(): Promise<void> {
    const info = await this.log.info();
    if (info.truncationDenied === true) {
      throw new this.deps.StateSyncError(
        "STREAM_CONFIG",
        "cannot compact: the log denies truncation (a deny_purge stream); nothing was written",
        { details: { truncationDenied: true } },
      );
    }
  }

  /** The state to snapshot, at the revision the replica is at. */
  private capture(): ChunkedCapture {
    return {
      base: this.replica.revision,
      // The log's version and state: a log that has not switched to this model's version yet is
      // compacted as what it is (docs/versions.md).
      model: this.replica.logModel,
      state: this.replica.logState,
      recent: this.replica.recentForSnapshot(),
      switchedFrom: this.replica.switchedFrom,
      ...(this.replica.origins.size > 0 ? { origins: this.replica.origins.toRows() } : {}),
    };
  }

  /**
   * A snapshot entry replicas would refuse (Replay.jump) must not replace the history: a patch
   * from another writer can leave a state that fails the schema (found by the fault tests: late
   * joiners then failed with CORRUPT_ENTRY and the history was gone), and an unconditional
   * command can nest it deeper than any entry may (`MAX_STATE_DEPTH`: a fresh-eyes trial saw
   * chunked snapshots every reader refused, then the truncation). Throws `VALIDATION`.
   */
  private check({ model, state, base }: ChunkedCapture): void {
    if (!safeParse(model.state, state).success) {
      throw this.refusal(base, "it fails the model's schema");
    }
    const problem = this.deps.findJsonProblem(state, this.deps.maxStateDepth);
    if (problem?.tooDeep) throw this.refusal(base, this.tooDeep(` at ${problem.path}`));
    if (problem !== undefined) throw this.refusal(base, `${problem.path}: ${problem.message}`);
    this.shallowState = state;
  }

  /**
   * Throws `VALIDATION` when `state` nests deeper than `MAX_STATE_DEPTH`: before anything is
   * written, part 0 of a chunked snapshot included (whose full check, `check`, runs after it).
   */
  private checkDepth(base: number, state: unknown): void {
    if (state === this.shallowState) return;
    if (this.deps.nestedDeeperThan(state, this.deps.maxStateDepth)) {
      throw this.refusal(base, this.tooDeep(""));
    }
    this.shallowState = state;
  }

  private tooDeep(where: string): string {
    return `its arrays and objects nest deeper than ${this.deps.maxStateDepth} levels${where}, more than an entry may hold; see docs/guarantees.md, "Known limits"`;
  }

  private refusal(base: number, why: string): StateSyncError {
    return new this.deps.StateSyncError(
      "VALIDATION",
      `not compacting at revision ${base}: the state cannot be a snapshot entry (${why}); nothing was written and the history is kept`,
      { details: { revision: base } },
    );
  }

  /**
   * Appends the state as a snapshot entry at the tail (or, for a state too large for one entry,
   * part 0 of a chunked snapshot); a conflict when the log moved.
   */
  private async appendSnapshotEntry(): Promise<Step> {
    await this.opener.fetchUpdates();
    if (this.replica.lastKind === "snapshot") {
      // One already. A chunked one is truncated before only when this replica saw it begin and
      // its parts hold the state this replica had at its base (`verifiedStart`), which must be
      // one readers can load (an older SDK wrote chunked snapshots of any depth).
      this.checkDepth(this.replica.revision, this.replica.logState);
      const truncateAt = this.replica.verifiedStart();
      if (truncateAt === undefined && this.replica.lastStart !== undefined) {
        this.status.report(
          new this.deps.StateSyncError(
            "CORRUPT_ENTRY",
            `not truncating before the chunked snapshot at revision ${this.replica.revision}: its parts do not hold this replica's state at its base, or readers would refuse them`,
            { details: { truncation: "declined", revision: this.replica.revision } },
          ),
        );
      }
      return { kind: "done", revision: this.replica.revision, truncateAt };
    }
    if (this.replica.readPosition !== this.replica.revision) {
      // Still waiting for a chunked snapshot to load (its state is not at the log's tail).
      throw new this.deps.StateSyncError(
        "UNAVAILABLE",
        "not compacting: this replica is still reading a chunked snapshot's parts",
      );
    }
    const capture = this.capture();
    if (!this.expectChunked) {
      this.check(capture);
      const { base, model, state } = capture;
      const entry: SnapshotEntry = {
        v: 1,
        kind: "snapshot",
        base,
        ts: Date.now(),
        client: this.clientId,
        model: model.name,
        version: model.version,
        initialHash: model.initialHash,
        state,
        recent: capture.recent,
        ...(capture.switchedFrom !== undefined ? { from: capture.switchedFrom } : {}),
        ...(capture.origins !== undefined ? { origins: capture.origins } : {}),
      };
      let prepared: Prepared | undefined;
      try {
        prepared = await this.appender.prepare(entry, "the snapshot entry");
      } catch (e) {
        if (!this.deps.isStateSyncError(e, "PAYLOAD_TOO_LARGE")) throw e;
        this.expectChunked = true; // and from now on part 0 goes first (invariant 4)
      }
      // Refused for its size by the log itself, whose limit shrank since it was learnt (a stream
      // edited under the replica): chunked, against the limit learnt again.
      const outcome =
        prepared &&
        (await this.appender
          .appendConditional(prepared, base, { timeoutMs: this.deps.outcomeTimeoutMs })
          .catch((e: unknown) => {
            if (!this.deps.isStateSyncError(e, "PAYLOAD_TOO_LARGE")) throw e;
            this.expectChunked = true;
            return undefined;
          }));
      if (outcome !== undefined) {
        if (outcome.kind === "conflict") {
          // Up to what the conflict named: a revision past the log's end is a server bug that
          // `catchUp` names (UNSUPPORTED_SERVER); before, compact() lost 100 races to no other
          // writer and failed RETRY_LIMIT (a trial, 2.10 after a refused append).
          await this.reader.catchUp(outcome.latest);
          return { kind: "conflict" };
        }
        const stored = outcome.entry;
        if (this.replica.revision === base) this.replica.consume([stored]);
        else if (this.replica.revision < stored.revision)
          await this.reader.catchUp(stored.revision);
        this.status.assertUsable();
        return { kind: "done", revision: stored.revision, truncateAt: stored.revision };
      }
    }
    this.checkDepth(capture.base, capture.state); // before part 0 (invariant 2)
    const start = await this.chunked.open(capture);
    return start === undefined ? { kind: "conflict" } : { kind: "chunked", capture, start };
  }

  /** The rest of a chunked snapshot after part 0: checks the state, writes its text. */
  private async finishChunked(capture: ChunkedCapture, start: ChunkedStart): Promise<Written> {
    this.check(capture); // part 0 alone, left behind, is a no-op
    const text = JSON.stringify(capture.state);
    // What readers will parse, checked as they check it (`parseStateText`) before any slice of it
    // is written: the truncation below follows only a snapshot they can load (invariant 2).
    const unreadable = this.deps.ownStateTextProblem(text, capture.state);
    if (unreadable !== undefined) throw this.refusal(capture.base, unreadable);
    // A state that shrank goes back to one entry next time.
    if (text.length * 3 < (await this.appender.limit()) / 2) this.expectChunked = false;
    const written = await this.chunked.finish(capture, start, text);
    if (this.replica.readPosition < written.revision) await this.reader.catchUp(written.revision);
    this.status.assertUsable();
    return { kind: "done", revision: written.revision, truncateAt: written.start };
  }
}

/** Where a compaction ended up. */
interface Written {
  readonly kind: "done";
  readonly revision: number;
  /** Truncate before this revision (undefined: not known, leave the history). */
  readonly truncateAt: number | undefined;
}

/** One attempt's outcome. */
type Step =
  | Written
  | { readonly kind: "conflict" }
  | { readonly kind: "chunked"; readonly capture: ChunkedCapture; readonly start: ChunkedStart };
