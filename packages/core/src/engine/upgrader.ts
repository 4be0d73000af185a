import type { SwitchEntry } from "../entry.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import type { CommandMap, Model } from "../model.js";
import { MAX_STATE_DEPTH } from "../entry-limits.js";
import { nestedDeeperThan } from "../nesting.js";
import type { Appender, Prepared } from "./appender.js";
import type { ContendingBatch, Contention } from "./contention.js";
import { DEFAULT_OUTCOME_TIMEOUT_MS } from "./options.js";
import type { Opener } from "./opener.js";
import type { Reader } from "./reader.js";
import type { Replica } from "./replica.js";
import type { StatusHub } from "./status.js";

/** Races a switch entry may lose to writers of the older version before `upgrade()` gives up. */
const MAX_SWITCH_RACES = 100;

/** When a replica of a newer model version switches a log that is at an older one. */
export type UpgradePolicy = "on-open" | "manual";

/**
 * Switches the log to this model's version (docs/versions.md): a `switch` entry carrying the
 * state migrated from the log's version, appended conditionally on the revision it was migrated
 * at, so it is written once however many new-version replicas start together (the others read
 * it and find nothing to do).
 *
 * Invariants:
 * 1. Nothing of this version is appended to a log at an older version: writers call `ensure()`
 *    first (with `"manual"`, it refuses with `UPGRADE_PENDING` instead of switching).
 * 2. A switch entry is based on the revision whose state it carries; a conflict means another
 *    entry came first: catch up and migrate again (or find the switch another replica wrote).
 * 3. One switch runs at a time (a second call joins it).
 * 5. A switch entry races other writers as any writer does (`Contention`): after a few lost races
 *    it announces itself with an intent and the others hold back until it lands (a fresh-eyes
 *    trial: an old-version writer appending back to back won every race, and the new version's
 *    replica opened only once that writer stopped, 10-22 s later, with no intent and no event).
 * 6. With `"manual"`, a live replica on a log at an older version is not `writable`
 *    (`UPGRADE_PENDING`) until the log is at this version.
 * 4. A switch refused for its state (a failing migration, a state nested deeper than
 *    `MAX_STATE_DEPTH` or larger than one entry) writes nothing, and leaves the replica not
 *    `writable` with that error until an append succeeds: every update would meet it (a
 *    fresh-eyes trial: a replica opened with `"on-open"` looked writable while every update
 *    failed). Reads go on.
 */
export class Upgrader<S, C extends CommandMap<S>> {
  private running: Promise<number> | undefined;

  constructor(
    private readonly policy: UpgradePolicy,
    private readonly model: Model<S, C>,
    private readonly clientId: string,
    private readonly replica: Replica<S, C>,
    private readonly reader: Reader<S, C>,
    private readonly opener: Opener<S, C>,
    private readonly appender: Appender,
    private readonly contention: Contention<S, C>,
    private readonly status: StatusHub,
  ) {}

  /** This model's version: what this replica's command entries say wrote them (`mv`). */
  get version(): number {
    return this.model.version;
  }

  /** Before appending: the log must be at this version (invariant 1). */
  async ensure(): Promise<void> {
    if (!this.replica.legacy) return;
    if (this.policy === "manual") throw this.pending();
    await this.upgrade();
  }

  /**
   * `UPGRADE_PENDING`, and the replica not `writable` with it until the log is at this version
   * (invariant 6): queued updates wait for `upgrade()` (a trial: `flush()` waited with the
   * replica `writable`, no `writeError` and no event, while every push met this).
   */
  private pending(): StateSyncError {
    const error = new StateSyncError(
      "UPGRADE_PENDING",
      `the log is at ${this.model.name} v${this.replica.logModel.version}; this replica runs v${this.model.version} with upgrade: "manual": call upgrade() to switch the log first`,
      { details: { logVersion: this.replica.logModel.version, version: this.model.version } },
    );
    this.status.cannotWrite(error);
    return error;
  }

  /**
   * With `"on-open"`: switches the log, if it is at an older version, once the replica has caught
   * up after opening (status `live`), whatever `waitFor` said: at once when it is live already,
   * else when it first gets there (a background opening, a reconnection). Before, only a replica
   * live when `start()` returned switched: one opened with `waitFor: "restored"` (the browser's
   * default) kept `upgradePending` until its first append (found by a fresh-eyes trial).
   * Failures are events, not rejections: a reader without permission to append, a failing
   * migration (its appends then fail with the same error). Resolves once done or given up
   * (stalled, closed); the caller awaits it only when the replica was live.
   */
  async afterOpen(): Promise<void> {
    if (!(await this.untilLive())) return;
    if (!this.replica.legacy) return;
    if (this.policy === "manual") {
      this.pending(); // not writable, saying why, until the log is at this version
      this.replica.onApplied(() => {
        if (!this.replica.legacy) this.status.refusalLifted("UPGRADE_PENDING");
        else if (this.status.writable) this.pending(); // an append (a compaction) or a reconnection
      });
      return;
    }
    await this.upgrade().catch((e: unknown) => {
      if (this.status.closed || isStateSyncError(e, "CLOSED")) return;
      this.status.report(
        e instanceof StateSyncError
          ? e
          : new StateSyncError("UNAVAILABLE", `the switch at open failed: ${String(e)}`, {
              cause: e,
            }),
      );
    });
  }

  /** True once the status is `live`; false if the replica stalls or closes first. */
  private untilLive(): Promise<boolean> {
    const settled = (s: string) =>
      s === "live" ? true : s === "stalled" || s === "closed" ? false : undefined;
    const now = settled(this.status.status);
    if (now !== undefined || this.status.closed) return Promise.resolve(now ?? false);
    return new Promise((resolve) => {
      const off = this.status.on("status", (s) => {
        const done = settled(s);
        if (done === undefined) return;
        off();
        resolve(done);
      });
    });
  }

  /**
   * Switches the log to this version if it is at an older one; resolves with the revision of the
   * switch entry (this replica's or another's), or the current revision when nothing was to do.
   * With `dryRun`, see {@link dryRun}.
   */
  upgrade(dryRun = false): Promise<number> {
    if (dryRun) return this.dryRun();
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  /**
   * Everything a switch does before it appends, appending nothing: catches up, then builds and
   * checks the switch entry on the current revision (its migration, depth, size against the
   * log's limit, format: `prepare`), and resolves with that revision (the current one when the
   * log is at this version already). A refusal is the real switch's, its message ending with
   * "dry run: nothing was written" (`details.dryRun`), and leaves the replica as it was. Before,
   * `statesync migrate --dry-run` only migrated the state, and said "would switch" for a switch
   * the real run refused `PAYLOAD_TOO_LARGE` (a fresh-eyes trial). Not checked: the permission to
   * append, and the races with other writers.
   */
  private async dryRun(): Promise<number> {
    this.status.assertUsable();
    await this.opener.fetchUpdates();
    if (!this.replica.legacy) return this.replica.revision;
    const base = this.replica.revision;
    await this.prepare(base, true);
    return base;
  }

  private async run(): Promise<number> {
    this.status.assertUsable();
    const batch: ContendingBatch = { conflicts: 0, announced: false, turnsWaited: 0, heldMs: 0 };
    for (let attempt = 0; attempt < MAX_SWITCH_RACES; attempt++) {
      await this.opener.fetchUpdates();
      if (!this.replica.legacy) {
        this.status.refusalLifted("UPGRADE_PENDING"); // another replica switched it
        return this.replica.revision;
      }
      await this.contention.beforeAttempt(batch); // invariant 5
      const base = this.replica.revision;
      const prepared = await this.prepare(base);
      const outcome = await this.appender.appendConditional(prepared, base, {
        timeoutMs: DEFAULT_OUTCOME_TIMEOUT_MS,
      });
      if (outcome.kind === "conflict") {
        // Invariant 2, and 5: announced after a few lost races.
        batch.conflicts += 1;
        await this.reader.catchUp(outcome.latest);
        await this.contention.afterConflict(batch, attempt);
        continue;
      }
      const stored = outcome.entry;
      if (this.replica.revision < stored.revision) await this.reader.catchUp(stored.revision);
      this.status.assertUsable();
      this.status.refusalLifted("UPGRADE_PENDING");
      return stored.revision;
    }
    throw new StateSyncError(
      "RETRY_LIMIT",
      `the switch entry lost ${MAX_SWITCH_RACES} races to other writers`,
    );
  }

  /**
   * The switch entry based on `base`, encoded and checked. When the state cannot be carried (its
   * migration fails, it nests deeper than `MAX_STATE_DEPTH`, or it is larger than one entry), the
   * refusal would meet every update (each must switch first): it makes the replica not writable
   * with that error (invariant 4) and is thrown with `details.upgradeRefused`; in a `dryRun`,
   * it is thrown saying so and changes nothing.
   */
  private async prepare(base: number, dryRun = false): Promise<Prepared> {
    try {
      const state = this.replica.migratedState(); // throws VALIDATION when a migration fails
      if (nestedDeeperThan(state, MAX_STATE_DEPTH)) {
        throw new StateSyncError(
          "VALIDATION",
          `its state nests arrays and objects deeper than ${MAX_STATE_DEPTH} levels, more than an entry may hold`,
          { details: { maxDepth: MAX_STATE_DEPTH } },
        );
      }
      const entry: SwitchEntry = {
        v: 2,
        kind: "switch",
        base,
        ts: Date.now(),
        client: this.clientId,
        model: this.model.name,
        from: this.replica.logModel.version,
        version: this.model.version,
        initialHash: this.model.initialHash,
        state,
        recent: this.replica.recentForSnapshot(),
        ...(this.replica.origins.size > 0 ? { origins: this.replica.origins.toRows() } : {}),
      };
      return await this.appender.prepare(entry, "the switch entry");
    } catch (e) {
      if (!isStateSyncError(e, "VALIDATION") && !isStateSyncError(e, "PAYLOAD_TOO_LARGE")) throw e;
      const what = `cannot switch the log to ${this.model.name} v${this.model.version} at revision ${base}: ${e.message}`;
      const details = { ...e.details, upgradeRefused: true, revision: base };
      if (dryRun) {
        throw new StateSyncError(e.code, `${what}; dry run: nothing was written`, {
          cause: e,
          details: { ...details, dryRun: true },
        });
      }
      const refused = new StateSyncError(
        e.code,
        `${what}; nothing was written, and updates fail until the switch can be written`,
        { cause: e, details },
      );
      this.status.cannotWrite(refused);
      throw refused;
    }
  }
}
