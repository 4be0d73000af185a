import type { CompactionPolicy } from "../compaction-policy.js";
import type { SnapshotEntry } from "../entry.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import { findNonJson } from "../json.js";
import type { RevisionedLog } from "../log.js";
import type { CommandMap, Model } from "../model.js";
import type { CompactionResult, SyncStats } from "../synchronizer-types.js";
import type { Appender } from "./appender.js";
import type { ContendingBatch, Contention } from "./contention.js";
import { DEFAULT_OUTCOME_TIMEOUT_MS } from "./options.js";
import type { Opener } from "./opener.js";
import type { Reader } from "./reader.js";
import type { AppliedBatch, Replica } from "./replica.js";
import type { StatusHub } from "./status.js";
import type { Writer } from "./writer.js";

/** Races a snapshot entry may lose to other writers before `compact()` gives up. */
const MAX_SNAPSHOT_RACES = 100;

/**
 * Compaction: writes the state into the log as a snapshot entry (conditionally, at the current
 * revision), then truncates the history before it; and the automatic policy that starts one
 * after so many entries or bytes.
 *
 * Invariants:
 * 1. A crash between the snapshot entry and the truncation loses nothing: the next compaction
 *    truncates. Concurrent compactors are safe: only one snapshot entry can be based on a
 *    revision; truncating below an already truncated point removes nothing (Pravega issues 4383
 *    and 6232).
 * 2. A state replicas would refuse as a snapshot (schema, JSON) never replaces the history.
 * 3. This replica's own updates wait while its snapshot entry is appended, so they never
 *    conflict with it; one compaction runs at a time (a second call joins it).
 */
export class Compactor<S, C extends CommandMap<S>> {
  private compacting: Promise<CompactionResult> | undefined;

  constructor(
    private readonly log: RevisionedLog,
    private readonly model: Model<S, C>,
    private readonly clientId: string,
    private readonly policy: CompactionPolicy | undefined,
    private readonly replica: Replica<S, C>,
    private readonly reader: Reader<S, C>,
    private readonly opener: Opener<S, C>,
    private readonly writer: Writer<S, C>,
    private readonly appender: Appender,
    private readonly contention: Contention<S, C>,
    private readonly status: StatusHub,
    private readonly stats: SyncStats,
  ) {
    if (policy) replica.onApplied((batch) => this.observe(batch));
  }

  /** See `StateSynchronizer.compact`. */
  compact(): Promise<CompactionResult> {
    if (this.compacting) return this.compacting;
    const run = this.run().finally(() => {
      this.compacting = undefined;
    });
    this.compacting = run;
    return run;
  }

  /** Waits for a running compaction (on close). */
  async settled(): Promise<void> {
    await this.compacting?.catch(() => undefined);
  }

  private observe({ entries, results }: AppliedBatch): void {
    const policy = this.policy!;
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!;
      const kind = r.kind === "applied" ? r.entry.kind : undefined;
      if (kind === "snapshot" || kind === "genesis") policy.reset();
      else policy.count(entries[i]!.data.byteLength);
    }
    if (!policy.due() || this.status.status !== "live" || this.compacting) return;
    this.compact().then(
      () => policy.succeeded(),
      (e: unknown) => {
        // Losing the race to other writers is not a failure: try again a little later.
        if (isStateSyncError(e, "CONFLICT") || isStateSyncError(e, "RETRY_LIMIT")) {
          return policy.deferred();
        }
        if (this.status.closed || isStateSyncError(e, "CLOSED")) return; // closing: not a problem
        const error =
          e instanceof StateSyncError
            ? e
            : new StateSyncError("UNAVAILABLE", `automatic compaction failed: ${String(e)}`, {
                cause: e,
              });
        if (policy.failed(error)) this.status.report(error);
      },
    );
  }

  private async run(): Promise<CompactionResult> {
    this.status.assertUsable();
    let revision = 0;
    // A snapshot entry races every writer of a busy log: after a few lost races it announces
    // itself with an intent like any writer, and the others let it go first (issue 10, case 11).
    const batch: ContendingBatch = { conflicts: 0, announced: false, turnsWaited: 0 };
    for (let attempt = 0; revision === 0; attempt++) {
      await this.contention.beforeAttempt(batch);
      await this.writer.pause(true); // invariant 3
      try {
        revision = await this.appendSnapshotEntry();
      } finally {
        await this.writer.pause(false);
      }
      if (revision > 0) break;
      if (attempt + 1 >= MAX_SNAPSHOT_RACES) {
        throw new StateSyncError(
          "RETRY_LIMIT",
          `the snapshot entry lost ${MAX_SNAPSHOT_RACES} races to other writers`,
          { details: { attempts: attempt + 1 } },
        );
      }
      batch.conflicts += 1;
      await this.contention.afterConflict(batch, attempt);
    }
    await this.log.truncateBefore(revision);
    this.stats.compactions += 1;
    return { revision };
  }

  /** Appends the state as a snapshot entry at the tail: its revision, or 0 if the log moved. */
  private async appendSnapshotEntry(): Promise<number> {
    await this.opener.fetchUpdates();
    if (this.replica.lastKind === "snapshot") return this.replica.revision; // one already
    const base = this.replica.revision;
    // The log's version and state: a log that has not switched to this model's version yet is
    // compacted as what it is (docs/versions.md).
    const model = this.replica.logModel;
    const state = this.replica.logState;
    // A snapshot entry replicas would refuse (Replay.jump) must not replace the history: a
    // patch from another writer can leave a state that fails the schema (found by the fault
    // tests: late joiners then failed with CORRUPT_ENTRY and the history was gone).
    const invalid = !model.state.safeParse(state).success
      ? "it fails the model's schema"
      : findNonJson(state);
    if (invalid !== undefined) {
      throw new StateSyncError(
        "VALIDATION",
        `not compacting at revision ${base}: the state cannot be a snapshot entry (${invalid}); the history is kept`,
        { details: { revision: base } },
      );
    }
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
      recent: this.replica.recentForSnapshot(),
      ...(this.replica.switchedFrom !== undefined ? { from: this.replica.switchedFrom } : {}),
      ...(this.replica.origins.size > 0 ? { origins: this.replica.origins.toRows() } : {}),
    };
    const prepared = await this.appender.prepare(entry, "the snapshot entry");
    const outcome = await this.appender.appendConditional(prepared, base, {
      timeoutMs: DEFAULT_OUTCOME_TIMEOUT_MS,
    });
    if (outcome.kind === "conflict") return 0;
    const stored = outcome.entry;
    if (this.replica.revision === base) this.replica.consume([stored]);
    else if (this.replica.revision < stored.revision) await this.reader.catchUp(stored.revision);
    this.status.assertUsable();
    return stored.revision;
  }
}
