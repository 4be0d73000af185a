import type { Immutable } from "immer";
import {
  noArguments,
  parseHistoryOptions,
  parsePendingId,
  parseRevision,
  parseSubscribeOptions,
  parseUpgradeOptions,
  parseWaitOptions,
} from "./engine/call-args.js";
import type { Compactor } from "./engine/compactor.js";
import type { Opener } from "./engine/opener.js";
import { optionsSchema, parseUpdateOptions, validation } from "./engine/options.js";
import type { Reader } from "./engine/reader.js";
import type { RecipeRun } from "./engine/recipes.js";
import type { Replica } from "./engine/replica.js";
import type { Snapshots } from "./engine/snapshots.js";
import { closedError, emptyStats, StatusHub } from "./engine/status.js";
import { ENDED, within } from "./engine/wait-limits.js";
import type { Upgrader } from "./engine/upgrader.js";
import { wireParts } from "./engine/wiring.js";
import type { Writer } from "./engine/writer.js";
import type { PendingPart } from "./pending/pending-queue.js";
import { noOtherTabs, type OtherTabPending } from "./pending/pending-api.js";
import { commandRun, refusedAtCall, withQueued, type PendingUpdate } from "./pending/pending-op.js";
import { StateSyncError } from "./errors.js";
import { assertOutsideRecipes } from "./synchronous.js";
import { readHistory, stateAtRevision, type HistoryEntry, type HistoryOptions } from "./history.js";
import type { RevisionedLog } from "./log.js";
import type { CommandArgs, CommandMap, Model } from "./model.js";
import type { SyncRecipe } from "./type-checks.js";
import type {
  CompactionResult,
  CreateSynchronizerOptions,
  QueuedPromise,
  StateSynchronizer,
  SubscribeOptions,
  SyncEvents,
  SyncStats,
  SyncStatus,
  UnconditionalResult,
  UpdateOptions,
  UpdateResult,
  UpgradeOptions,
} from "./synchronizer-types.js";

/**
 * Creates a replica over `options.log` (see {@link StateSynchronizer}): restores the local
 * snapshot, checks it against the log, writes the genesis entry if the log is empty, catches up
 * and (with `live`) follows the log.
 *
 * Rejects with `VALIDATION` for bad options; with `waitFor: "synced"` also with a fatal start
 * error (`MODEL_MISMATCH`, `TRUNCATED`, `UNSUPPORTED_FORMAT`, `PERMISSION_DENIED`, ...). An
 * unreachable log is not fatal: the replica resolves with its stored state and status `offline`
 * and keeps trying in the background.
 */
export async function createSynchronizer<S, C extends CommandMap<S>>(
  options: CreateSynchronizerOptions<S, C>,
): Promise<StateSynchronizer<S, C>> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw validation("invalid synchronizer options", parsed.error);
  const sync = new Synchronizer<S, C>(options);
  try {
    await sync.start();
  } catch (e) {
    await sync.close().catch(() => undefined);
    throw e;
  }
  return sync;
}

/**
 * The facade: forwards the public API to the parts of a replica (built by `wireParts`); it holds
 * no logic of its own (see packages/core/README.md for the map of the parts):
 * - `StatusHub`: status, stall, events;      - `Replica`: state, revision, waiters, subscribers;
 * - `Reader`: catch-up reads and the follower; - `Opener`: opening the log, reconnecting;
 * - `Snapshots`: the local snapshot;           - `Writer`: the queue and the write loop;
 * - `Appender`: exactly-once appends;          - `Contention`: fairness between writers;
 * - `RecipeRunner`: recipes and state checks;  - `Compactor`: compaction and its policy.
 */
class Synchronizer<S, C extends CommandMap<S>> implements StateSynchronizer<S, C> {
  readonly clientId: string;
  readonly model: Model<S, C>;
  readonly stats: SyncStats = emptyStats();

  private readonly log: RevisionedLog;
  private readonly hub = new StatusHub();
  private readonly replica: Replica<S, C>;
  private readonly reader: Reader<S, C>;
  private readonly opener: Opener<S, C>;
  private readonly snapshots: Snapshots<S, C>;
  private readonly writer: Writer<S, C>;
  private readonly compactor: Compactor<S, C>;
  private readonly upgrader: Upgrader<S, C>;
  private readonly offline: PendingPart<S, C>;
  private readonly unwatchConnection: (() => void) | undefined;
  private closing: Promise<void> | undefined;

  constructor(private readonly options: CreateSynchronizerOptions<S, C>) {
    const parts = wireParts(options, this.hub, this.stats);
    ({ log: this.log, model: this.model, clientId: this.clientId } = parts);
    ({ replica: this.replica, reader: this.reader, opener: this.opener } = parts);
    ({ snapshots: this.snapshots, writer: this.writer, compactor: this.compactor } = parts);
    ({ upgrader: this.upgrader, offline: this.offline } = parts);
    this.unwatchConnection = parts.unwatchConnection;
  }

  async start(): Promise<void> {
    const pending = this.options.pending;
    if (pending) {
      await this.offline.open(
        pending.store,
        this.options.snapshotKey ?? this.model.name,
        pending.owner,
      );
    }
    await this.opener.start(this.options.waitFor ?? "synced");
    this.offline.start();
    // "on-open": the switch once caught up; awaited when live now, else it runs when the replica
    // gets there (`waitFor: "restored"`, offline). Its failures are events (Upgrader.afterOpen).
    const switching = this.upgrader.afterOpen();
    if (this.hub.status === "live") await switching;
  }

  // ---- reads

  get state(): Immutable<S> {
    return this.replica.state;
  }
  get revision(): number {
    return this.replica.revision;
  }
  get status(): SyncStatus {
    return this.hub.status;
  }
  get stallReason(): StateSyncError | undefined {
    return this.hub.stallReason;
  }
  get writable(): boolean {
    return this.hub.writable;
  }
  get writeError(): StateSyncError | undefined {
    return this.hub.writeError;
  }

  subscribe(
    listener: (state: Immutable<S>, revision: number) => void,
    options?: SubscribeOptions,
  ): () => void {
    if (parseSubscribeOptions(options)) return this.offline.view.subscribe(listener);
    return this.replica.subscribe(listener);
  }

  // ---- the optimistic view and the pending queue (pending/)

  get optimisticState(): Immutable<S> {
    return this.offline.view.state;
  }
  get pending(): readonly PendingUpdate[] {
    return this.offline.pending;
  }
  get pendingCount(): number {
    return this.offline.count;
  }
  get pendingInOtherTabs(): readonly OtherTabPending[] {
    return noOtherTabs();
  }
  appliedSeq(origin: string): number | undefined {
    if (typeof origin !== "string") {
      throw new StateSyncError("VALIDATION", "appliedSeq: origin must be a string");
    }
    return this.replica.origins.get(origin)?.seq;
  }
  flush(): Promise<void> {
    return noArguments("flush", arguments.length) ?? this.offline.flush();
  }
  discard(id: number): Promise<boolean> {
    try {
      return this.offline.discard(parsePendingId(id));
    } catch (e) {
      return Promise.reject(e);
    }
  }
  clearPending(): Promise<number> {
    return noArguments("clearPending", arguments.length) ?? this.offline.clear();
  }
  rebindPending(): Promise<number> {
    return noArguments("rebindPending", arguments.length) ?? this.offline.rebind();
  }

  on<E extends keyof SyncEvents>(event: E, listener: SyncEvents[E]): () => void {
    return this.hub.on(event, listener);
  }

  // Both end CLOSED at close(), at once, a stalled replica's too; their read stops at its next
  // entry (see StateSynchronizer.close).
  async history(options?: HistoryOptions): Promise<HistoryEntry[]> {
    const range = parseHistoryOptions(options);
    if (this.hub.closed) throw closedError();
    return this.hub.untilClosed(readHistory(this.log, range, this.hub.signal), closedError);
  }

  async stateAt(revision: number): Promise<Immutable<S>> {
    parseRevision(revision, "stateAt's revision");
    if (this.hub.closed) throw closedError();
    const read = stateAtRevision(this.log, this.model, revision, this.hub.signal);
    return this.hub.untilClosed(read, closedError);
  }

  fetchUpdates(): Promise<number> {
    return this.opener.fetchUpdates();
  }

  waitFor(revision: number, options?: { signal?: AbortSignal }): Promise<void> {
    let signal: AbortSignal | undefined;
    try {
      // Both arguments are checked before anything starts (a catch-up below).
      parseRevision(revision, "waitFor's revision");
      signal = parseWaitOptions(options, "waitFor");
      if (this.revision >= revision) return Promise.resolve();
      this.hub.assertUsable();
    } catch (e) {
      return Promise.reject(e);
    }
    if (!(this.options.live ?? true)) this.fetchUpdates().catch(() => undefined);
    if (!this.log.contiguous) return this.waitForShared(revision, signal);
    return this.replica.waitFor(revision, signal);
  }

  /**
   * `waitFor` in a non-contiguous log (a shared stream): a revision another state wrote, which
   * the log is past while this state's last entry lies before it, is reached with that entry.
   * Before, it waited for this state's next entry after it, for ever on a quiet key (a
   * fresh-eyes trial). A revision not written yet is waited for as in an own stream.
   */
  private async waitForShared(revision: number, signal?: AbortSignal): Promise<void> {
    let target = revision;
    const limits = { deadline: Infinity, signal: signal ?? this.hub.signal };
    // Offline or failing: wait for the revision itself.
    const info = await within(this.log.info(), limits).catch((): typeof ENDED => ENDED);
    if (info !== ENDED && (info.logPosition ?? info.latestRevision) >= revision) {
      target = Math.min(revision, info.latestRevision);
    }
    return this.replica.waitFor(target, signal);
  }

  synced(options?: { signal?: AbortSignal }): Promise<number> {
    let signal: AbortSignal | undefined;
    try {
      signal = parseWaitOptions(options, "synced"); // before the catch-up starts
    } catch (e) {
      return Promise.reject(e);
    }
    return this.opener.synced(signal);
  }

  // ---- writes

  update<R>(recipe: SyncRecipe<S, R>, options?: UpdateOptions): QueuedPromise<UpdateResult<S, R>>;
  update<K extends keyof C & string>(
    command: K,
    args: CommandArgs<C[K]>,
    options?: UpdateOptions,
  ): QueuedPromise<UpdateResult<S, void>>;
  update(
    first: unknown,
    second?: unknown,
    third?: unknown,
  ): QueuedPromise<UpdateResult<S, unknown>> {
    assertOutsideRecipes("update"); // thrown: the recipe that called it fails with it
    try {
      this.hub.assertUsable();
      let run: RecipeRun;
      let options: unknown;
      if (typeof first === "function") {
        run = { run: first as RecipeRun["run"] };
        options = second;
      } else if (typeof first === "string") {
        run = commandRun(this.model as never, first, second, "update");
        options = third;
      } else {
        throw new StateSyncError("VALIDATION", "update takes a recipe function or a command name");
      }
      const parsed = parseUpdateOptions(options);
      if (this.offline.enabled) {
        const { result, queued } = this.offline.enqueue("update", run, parsed.signal);
        // A queued update's rejection is never unhandled: a refusal is also a "refused" event,
        // and CLOSED leaves it stored (docs/offline.md); offline-first apps often do not await.
        result.catch(() => undefined);
        return withQueued(result as Promise<UpdateResult<S, unknown>>, queued);
      }
      return withQueued(
        new Promise((resolve, reject) => {
          // Built field by field, one shape for every update (spreading two objects into it
          // cost several µs an update in a profile, and left the queue's ops of mixed shapes).
          this.writer.enqueue({
            run: run.run,
            command: run.command,
            maxAttempts: parsed.maxAttempts,
            outcomeTimeoutMs: parsed.outcomeTimeoutMs,
            signal: parsed.signal,
            attempts: 0,
            deadline: undefined,
            resolve,
            reject,
          });
        }),
      );
    } catch (e) {
      return refusedAtCall(e, this.offline.enabled);
    }
  }

  updateUnconditionally<K extends keyof C & string>(
    command: K,
    args: CommandArgs<C[K]>,
    options?: UpdateOptions,
  ): QueuedPromise<UnconditionalResult> {
    assertOutsideRecipes("updateUnconditionally");
    try {
      this.hub.assertUsable();
      if (typeof command !== "string") {
        throw new StateSyncError("VALIDATION", "command must be a command name");
      }
      const run = commandRun(this.model as never, command, args, "command");
      const parsed = parseUpdateOptions(options);
      if (this.offline.enabled) {
        const { result, queued } = this.offline.enqueue("command", run, parsed.signal);
        result.catch(() => undefined); // as for update(): never an unhandled rejection
        return withQueued(result as Promise<UnconditionalResult>, queued);
      }
      return withQueued(this.writer.unconditional(command, args, parsed));
    } catch (e) {
      return refusedAtCall(e, this.offline.enabled);
    }
  }

  async upgrade(options?: UpgradeOptions): Promise<{ readonly revision: number }> {
    const { dryRun } = parseUpgradeOptions(options); // VALIDATION: a rejection, not a throw
    return { revision: await this.upgrader.upgrade(dryRun) };
  }
  get upgradePending(): boolean {
    return this.replica.legacy;
  }

  compact(): Promise<CompactionResult> {
    return noArguments("compact", arguments.length) ?? this.compactor.compact();
  }

  // ---- snapshots, close

  saveSnapshot(): Promise<void> {
    const unexpected = noArguments("saveSnapshot", arguments.length);
    if (unexpected) return unexpected;
    if (this.hub.closed) return Promise.reject(closedError());
    return this.snapshots.save();
  }

  close(): Promise<void> {
    return (this.closing ??= this.shutdown()); // a second call waits for the first one's work
  }

  private async shutdown(): Promise<void> {
    this.hub.close();
    this.opener.close();
    const closed = closedError();
    await this.writer.close(closed);
    await this.offline.close(closed);
    await this.compactor.settled();
    await this.reader.stopFollowing();
    this.unwatchConnection?.();
    this.replica.rejectWaiters(closed);
    await this.snapshots.close();
    this.hub.finish();
    if (this.options.ownsLog) await this.log.close().catch(() => undefined);
    await this.options.onClose?.();
  }
}
