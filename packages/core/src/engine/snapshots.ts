import { settledWithin } from "../backoff.js";
import { deepFreeze } from "../freeze.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import { MAX_STATE_DEPTH } from "../entry-limits.js";
import { nestedDeeperThanInSlices } from "../nesting.js";
import type { LogInfo, RevisionedLog } from "../log.js";
import type { CommandMap, Model } from "../model.js";
import { modelOfVersion } from "../versions.js";
import type { SnapshotRecord, SnapshotStore } from "../snapshot-store.js";
import type { SyncStats } from "../synchronizer-types.js";
import type { Replica } from "./replica.js";
import { discardSnapshot } from "./discard-snapshot.js";
import { logHasStart } from "./log-changes.js";
import { anotherLog, restoredRecordProblem } from "./restore-check.js";
import type { StatusHub } from "./status.js";

/** Least time between two automatic snapshot saves (ms). */
const AUTO_SAVE_MIN_MS = 250;
/**
 * Automatic saves take at most about this share of the time: after a save that took d ms, the
 * next automatic one starts no sooner than d / share later. A large state (100 MB takes a second
 * or more to write) is then saved every ten seconds or so, not four times a second.
 */
const AUTO_SAVE_SHARE = 0.1;
/**
 * How long anything waits for the snapshot store, ms: opening for the stored snapshot (or its
 * deletion), a save for the store's answer, `close()` for the saves: another tab may hold the
 * database (IndexedDB runs a read after every earlier write to the same store, and a frozen or
 * hung tab's never finishes). Past it the replica opens from the log, the save rejects (a
 * `SNAPSHOT_FAILED` event says so either way) and `close()` goes on.
 */
export const STORE_WAIT_MS = 10_000;

/**
 * The local snapshot of a replica: restoring it at open, checking it against the log, and saving
 * it (every `every` consumed entries, at most one save starting every {@link AUTO_SAVE_MIN_MS},
 * or every ten times the last save's duration if longer; on request; on close).
 *
 * Invariants:
 * 1. A restored snapshot is used only if it belongs to this model, nests at most
 *    `MAX_STATE_DEPTH` levels, passes the schema, is JSON, and the log it came from (same
 *    identity) still agrees with it at its revision; otherwise a `CORRUPT_SNAPSHOT` event says
 *    why and the replica starts from the log. The snapshot is then discarded, unless invariant 4
 *    keeps it. A state nested deeper is never saved either (`SNAPSHOT_FAILED`, said once).
 * 2. Saves run one at a time, each recording the state as it is when it starts. At most two are
 *    outstanding: a request while one runs and another waits joins the waiting one.
 * 3. Nothing is saved before the replica stands on the log (identity known, anchored), and
 *    nothing once it stopped because the log switched to a newer model version than its own
 *    (`MODEL_UPGRADED`): its state is one the log has left, and the key belongs to the newer app.
 * 4. A stored snapshot is deleted only when it is damaged or the log shows it stale (then it is
 *    kept under `<key> (replaced)` first: `discardSnapshot`). One of
 *    another model or of a version this model cannot read (a newer one: this app is a rollback
 *    or a stale tab) is neither used nor deleted. Within one log, a newer version's snapshot is
 *    at a higher revision than any state an older replica reaches (it stops before the switch),
 *    so the store's revision rule keeps it from being replaced; only a replica standing on a
 *    recreated log (another identity, a snapshot no version can use) replaces it.
 * 5. No wait on the store lasts past {@link STORE_WAIT_MS} (stop 13): a save whose store has not
 *    answered by then rejects `SNAPSHOT_FAILED` (`details.timedOut`, one `"error"` event), and so
 *    does a save queued behind it. Until the store answers that write, saves are not sent to it
 *    (it runs writes in order: they would only queue behind the one that hangs) and reject at
 *    once, `details.skipped`, without another event (a save per applied batch would otherwise
 *    be an event per batch). Once it answers, one save of the current state follows, unless
 *    the replica closed meanwhile, and saving goes on as before. `close()` waits at most
 *    {@link STORE_WAIT_MS} in all, and no event of a save comes after it.
 */
export class Snapshots<S, C extends CommandMap<S>> {
  /** Identity of the log the replica's state comes from (set when the log is opened). */
  logIdentity: string | undefined;
  /** Identity of the log of the snapshot restored at open, if one was (kept after the check). */
  restoredIdentity: string | undefined;
  private restored: SnapshotRecord | undefined;
  /** The check kept the snapshot over a purged log: the opener writes it back (log-changes.ts). */
  keptOverPurge = false;
  private consumedSinceSave = 0;
  private saving: Promise<void> = Promise.resolve();
  private nextSave: Promise<void> | undefined;
  private outstanding = 0;
  private lastAutoSave = -Infinity;
  /** An automatic save came due while a save ran: start the wait for it when that one ends. */
  private autoSaveAfterRun = false;
  /** Least time between automatic saves now, ms (scales with how long a save takes). */
  private autoSaveGapMs = AUTO_SAVE_MIN_MS;
  private autoSaveTimer: ReturnType<typeof setTimeout> | undefined;
  /** A write the store did not answer within the wait, until it does (invariant 5). */
  private unanswered: Promise<void> | undefined;
  /** No save waits past this time (ms since the epoch): set by `close()` (invariant 5). */
  private closeBy = Infinity;
  /** The last save was refused for its state's depth, and said so (`tooDeep`). */
  private tooDeepReported = false;

  constructor(
    private readonly store: SnapshotStore | undefined,
    private readonly key: string,
    private readonly every: number,
    private readonly model: Model<S, C>,
    private readonly replica: Replica<S, C>,
    private readonly status: StatusHub,
    private readonly stats: SyncStats,
  ) {
    replica.onApplied(({ entries }) => {
      this.consumedSinceSave += entries.length;
      if (this.every > 0 && this.consumedSinceSave >= this.every) this.autoSave();
    });
  }

  /**
   * Loads the stored snapshot into the replica when it is usable (invariant 1, first part);
   * another log's is refused at once when `logPrefix` (`RevisionedLog.identityPrefix`) tells.
   */
  async restore(logPrefix?: string): Promise<void> {
    if (!this.store) return;
    let record: SnapshotRecord | undefined;
    const loading = this.store.load(this.key);
    try {
      if (!(await settledWithin(loading, STORE_WAIT_MS))) {
        loading.catch(() => undefined);
        const why = `the snapshot store did not answer within ${STORE_WAIT_MS} ms (in a browser, another tab may hold its database; in Node, a disk or file system that hangs); opening from the log`;
        return this.status.report(new StateSyncError("SNAPSHOT_FAILED", why));
      }
      record = await loading;
    } catch (e) {
      return this.discard(e instanceof Error ? e.message : String(e));
    }
    if (record === undefined) return;
    const foreign = logPrefix && anotherLog(record.logIdentity, `${logPrefix}@`, logPrefix);
    if (foreign) return this.discard(foreign);
    // A snapshot of an older version of the model resumes the log at that version (its state is
    // then migrated up like the log's). One of another model or of a version this model cannot
    // read (newer, or outside its chain) is not ours to judge: it is kept for the app that wrote
    // it (invariant 4).
    const model =
      record.model === this.model.name
        ? modelOfVersion(this.model, record.modelVersion)
        : undefined;
    if (model === undefined) {
      const whose =
        record.model !== this.model.name
          ? `it belongs to model ${record.model}`
          : `it was saved by ${record.model} v${record.modelVersion}, which v${this.model.version} cannot read`;
      return this.status.report(
        new StateSyncError(
          "CORRUPT_SNAPSHOT",
          `not using the local snapshot: ${whose}; it is kept`,
          {
            details: { kept: true, model: record.model, modelVersion: record.modelVersion },
          },
        ),
      );
    }
    const problem = restoredRecordProblem(record, model);
    if (problem !== undefined) return this.discard(problem);
    this.replica.reset({
      state: deepFreeze(record.state),
      revision: record.revision,
      messageId: record.messageId,
      version: record.modelVersion,
      switchedFrom: record.switchedFrom,
      origins: record.origins,
    });
    this.logIdentity = this.restoredIdentity = record.logIdentity;
    this.restored = record;
    this.stats.snapshotsRestored += 1;
  }

  /**
   * True while a restored snapshot has not been checked against the log yet: the replica serves
   * reads from it, but nothing reads or writes the log on top of it until the check ran
   * (invariant 1; before, a `synced()` or an update that reached the log before the reconnection
   * did caught up from the snapshot's revision unchecked: a snapshot ahead of the log stayed).
   */
  get unchecked(): boolean {
    return this.restored !== undefined;
  }

  /**
   * Checks a restored snapshot against the log it claims to come from (invariant 1). The record
   * counts as checked only once the check ran to its end: a read that fails (`UNAVAILABLE`)
   * leaves it for the next opening.
   */
  async checkAgainstLog(log: RevisionedLog, info: LogInfo): Promise<void> {
    const record = this.restored;
    if (record === undefined) return;
    let problem: string | undefined;
    if (record.logIdentity !== info.identity) {
      problem =
        anotherLog(record.logIdentity, info.identity) ??
        "the log was recreated since it was written";
    } else if (record.revision > info.latestRevision) {
      const ahead = `it is ahead of the log (revision ${record.revision} > ${info.latestRevision})`;
      problem = info.latestRevision > 0 ? ahead : "the log holds none of its entries (purged)";
    } else if (record.revision > 0) {
      const entry = await log.entryAt(record.revision);
      if (this.status.closed) return; // closed meanwhile: nothing to report or discard
      // Purged since (a compaction, an operator's purge): still good when nothing after it is
      // missing (issue 10, case 4), else the catch-up jumps onto the log's first snapshot entry.
      // Only an entry missing from the middle of the retained history makes it suspect.
      let purged = info.firstRevision === 0 || info.firstRevision > record.revision;
      // A compaction after `info` may have removed it: asked again (CI's chaos check, stop 45).
      const now = entry === undefined && !purged ? await log.info() : info;
      if (this.status.closed) return;
      purged ||= now.firstRevision === 0 || now.firstRevision > record.revision;
      if (entry === undefined) {
        if (!purged) problem = `the log has no entry at revision ${record.revision}`;
        else this.keptOverPurge = !(await logHasStart(log, now));
      } else if (entry.messageId !== record.messageId) {
        problem = `the log's entry at revision ${record.revision} is another one`;
      }
    }
    if (problem !== undefined) {
      // Gone before it counts as checked (a synced() during a slow delete read on top: stop 30).
      this.stats.snapshotsRestored -= 1;
      this.replica.reset();
    }
    this.restored = undefined;
    if (problem !== undefined) await this.discard(problem, record);
  }

  /** See `discardSnapshot`; `kept`: a snapshot the log stopped agreeing with, kept aside. */
  private discard(problem: string, kept?: SnapshotRecord): Promise<void> {
    const report = (e: StateSyncError) => this.status.report(e);
    return discardSnapshot(this.store, this.key, problem, report, STORE_WAIT_MS, kept);
  }

  /**
   * Saves now (invariant 2); rejects `SNAPSHOT_FAILED` when the store cannot write or does not
   * answer within {@link STORE_WAIT_MS} (invariant 5), and with the stall error once the log
   * switched past this model (invariant 3: nothing is written).
   */
  save(): Promise<void> {
    const store = this.store;
    if (store && this.upgradedPast()) return Promise.reject(this.status.stallReason);
    if (!store || !this.due()) return this.saving;
    this.consumedSinceSave = 0;
    if (this.nextSave && this.outstanding >= 2) return this.nextSave;
    this.outstanding += 1;
    const run = async () => {
      if (this.nextSave === p) this.nextSave = undefined;
      try {
        await this.write(store);
      } finally {
        this.outstanding -= 1;
      }
    };
    const p = this.saving.then(run, run);
    this.nextSave = p;
    this.saving = p.catch(() => undefined);
    return p;
  }

  /**
   * Stops automatic saves, waits for the running ones, and saves the final state: at most
   * {@link STORE_WAIT_MS} in all (invariant 5). Never rejects.
   */
  async close(): Promise<void> {
    if (this.autoSaveTimer) clearTimeout(this.autoSaveTimer);
    this.autoSaveTimer = undefined;
    this.closeBy = Date.now() + STORE_WAIT_MS;
    // Each save ends by `closeBy` on its own, so its event (if any) comes before close() ends.
    await this.saving;
    await this.save().catch(() => undefined);
  }

  private autoSave(): void {
    if (this.autoSaveTimer !== undefined) return;
    // Never queued behind a running save: the gap is known only once it is done (a 100 MB
    // state's saves ran back to back and the replica fell behind the log, found by the chunked
    // benchmark). The save that ends starts the wait for the next one.
    if (this.outstanding > 0 || this.unanswered) {
      this.autoSaveAfterRun = true;
      return;
    }
    const wait = this.lastAutoSave + this.autoSaveGapMs - Date.now();
    const save = () => {
      this.autoSaveTimer = undefined;
      this.lastAutoSave = Date.now();
      if (this.status.closed) return;
      void this.save()
        .catch(() => undefined)
        .then(() => {
          if (!this.autoSaveAfterRun || this.status.closed) return;
          this.autoSaveAfterRun = false;
          this.autoSave();
        });
    };
    if (wait <= 0) save();
    else this.autoSaveTimer = setTimeout(save, wait);
  }

  private async write(store: SnapshotStore): Promise<void> {
    if (!this.due()) return;
    if (this.unanswered) {
      // Not sent: it would queue behind the write that hangs (invariant 5). No second event.
      this.autoSaveAfterRun = true;
      throw new StateSyncError(
        "SNAPSHOT_FAILED",
        `the snapshot store did not answer an earlier save within ${STORE_WAIT_MS} ms and has not answered since (in a browser, another tab may hold its database; in Node, a disk or file system that hangs); not saving until it does`,
        { details: { timedOut: true, timeoutMs: STORE_WAIT_MS, skipped: true } },
      );
    }
    const started = Date.now();
    const record: SnapshotRecord = {
      format: 1,
      revision: this.replica.revision,
      // The log's state at its version: what a replica of any newer version can resume from.
      state: this.replica.logState,
      logIdentity: this.logIdentity!,
      messageId: this.replica.messageId,
      model: this.model.name,
      modelVersion: this.replica.logModel.version,
      ...(this.replica.switchedFrom !== undefined
        ? { switchedFrom: this.replica.switchedFrom }
        : {}),
      ...(this.replica.origins.size > 0 ? { origins: this.replica.origins.toRows() } : {}),
      savedAt: Date.now(),
    };
    // Walked in slices (the record is captured: the replica may move on meanwhile), like the
    // browser store's encoding, and counted in the save's time.
    if (await nestedDeeperThanInSlices(record.state, MAX_STATE_DEPTH)) {
      throw this.tooDeep(record.revision);
    }
    this.tooDeepReported = false;
    const writing = (async () => store.save(this.key, record))();
    const waitMs = Math.max(0, Math.min(STORE_WAIT_MS, this.closeBy - started));
    if (!(await settledWithin(writing, waitMs))) throw this.timedOut(writing, waitMs);
    try {
      await writing;
      this.stats.snapshotsSaved += 1;
      const took = Date.now() - started;
      this.autoSaveGapMs = Math.max(AUTO_SAVE_MIN_MS, took / AUTO_SAVE_SHARE);
    } catch (e) {
      const error = isStateSyncError(e)
        ? e
        : new StateSyncError("SNAPSHOT_FAILED", `saving the local snapshot failed: ${String(e)}`, {
            cause: e,
          });
      this.status.report(error);
      throw error;
    }
  }

  /**
   * The error of a save whose state nests deeper than `MAX_STATE_DEPTH` (unconditional commands
   * can make one: docs/guarantees.md, "Known limits"): not sent to the store, which could not
   * write it (its `JSON.stringify` overflows the stack thousands of levels down) or would write
   * what every load discards. Reported once until a save succeeds (automatic saves would
   * otherwise report it at every batch).
   */
  private tooDeep(revision: number): StateSyncError {
    const error = new StateSyncError(
      "SNAPSHOT_FAILED",
      `not saving the local snapshot at revision ${revision}: its state nests arrays and objects deeper than ${MAX_STATE_DEPTH} levels, more than a snapshot may hold (the replica keeps working from the log)`,
      { details: { maxDepth: MAX_STATE_DEPTH, revision } },
    );
    if (!this.tooDeepReported) this.status.report(error);
    this.tooDeepReported = true;
    return error;
  }

  /**
   * A write the store did not answer within `waitMs`: reported and returned as the save's error.
   * Until the store answers it, saves are skipped; then one save follows (invariant 5).
   */
  private timedOut(writing: Promise<void>, waitMs: number): StateSyncError {
    this.unanswered = writing;
    this.autoSaveAfterRun = true;
    const answered = () => {
      this.unanswered = undefined;
      if (this.status.closed || !this.autoSaveAfterRun) return;
      this.autoSaveAfterRun = false;
      this.autoSave();
    };
    void writing
      .then(
        () => (this.stats.snapshotsSaved += 1),
        () => undefined,
      )
      .then(answered);
    const error = new StateSyncError(
      "SNAPSHOT_FAILED",
      `the snapshot store did not answer within ${waitMs} ms (in a browser, another tab may hold its database; in Node, a disk or file system that hangs); the save may still land, later saves fail at once until the store answers, then saving resumes`,
      { details: { timedOut: true, timeoutMs: waitMs } },
    );
    this.status.report(error);
    return error;
  }

  private due(): boolean {
    return (
      this.logIdentity !== undefined &&
      this.replica.revision > 0 &&
      this.replica.anchored &&
      !this.upgradedPast()
    );
  }

  /** The replica stopped because the log switched to a newer model version (invariant 3). */
  private upgradedPast(): boolean {
    return this.status.stallReason?.code === "MODEL_UPGRADED";
  }
}
