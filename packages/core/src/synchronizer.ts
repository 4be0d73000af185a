import { freeze, produceWithPatches, type Immutable, type Patch } from "immer";
import { z } from "zod";
import { applyEntry, entryContext } from "./apply.js";
import { abortError, backoffDelay, sleep } from "./backoff.js";
import { decodeEntry, encodeEntry, type Entry, type StoredPatch } from "./entry.js";
import { AppendConflictError, isStateSyncError, StateSyncError } from "./errors.js";
import { findNonJson } from "./json.js";
import type { LogEntry, LogFollower, RevisionedLog } from "./log.js";
import type { CommandArgs, CommandMap, Model } from "./model.js";
import { randomId, randomSeed } from "./prng.js";
import type { SnapshotRecord, SnapshotStore } from "./snapshot-store.js";
import type {
  CreateSynchronizerOptions,
  Recipe,
  StateSynchronizer,
  SyncEvents,
  SyncStats,
  SyncStatus,
  UpdateOptions,
  UpdateResult,
} from "./synchronizer-types.js";

const DEFAULT_MAX_ATTEMPTS = 64;
const DEFAULT_OUTCOME_TIMEOUT_MS = 30_000;
const MAX_BATCH = 64;
const FOLLOWER_GRACE_MS = 250;

const optionsSchema = z.object({
  log: z.custom<RevisionedLog>(
    (v) => typeof v === "object" && v !== null && typeof (v as RevisionedLog).read === "function",
    "log must be a RevisionedLog",
  ),
  model: z.custom<Model<unknown>>(
    (v) =>
      typeof v === "object" && v !== null && typeof (v as Model<unknown>).initialHash === "string",
    "model must come from defineModel()",
  ),
  snapshots: z
    .union([z.literal(false), z.custom<SnapshotStore>((v) => typeof v === "object")])
    .optional(),
  snapshotKey: z.string().min(1).optional(),
  snapshotEvery: z.number().int().nonnegative().optional(),
  clientId: z.string().min(1).max(256).optional(),
  live: z.boolean().optional(),
  waitFor: z.enum(["synced", "restored"]).optional(),
  ownsLog: z.boolean().optional(),
  onClose: z.function().optional(),
  onError: z.function().optional(),
  onStatus: z.function().optional(),
});

const updateOptionsSchema = z
  .object({
    maxAttempts: z.number().int().positive().optional(),
    signal: z.custom<AbortSignal>((v) => v === undefined || v instanceof AbortSignal).optional(),
    outcomeTimeoutMs: z.number().positive().optional(),
  })
  .optional();

function validation(what: string, error: z.ZodError): StateSyncError {
  return new StateSyncError("VALIDATION", `${what}: ${z.prettifyError(error)}`, { cause: error });
}

/** A conditional update waiting in the local queue. */
interface PendingUpdate<S> {
  run: (draft: unknown, ctx: import("./model.js").UpdateContext) => unknown;
  command?: { name: string; args: unknown };
  maxAttempts: number;
  outcomeTimeoutMs: number;
  signal: AbortSignal | undefined;
  attempts: number;
  resolve: (r: UpdateResult<S, unknown>) => void;
  reject: (e: unknown) => void;
}

interface Waiter {
  revision: number;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/**
 * Creates a replica over `options.log` (see {@link StateSynchronizer}): restores the local
 * snapshot, checks it against the log, writes the genesis entry if the log is empty, catches up
 * and (with `live`) follows the log.
 *
 * Rejects with `VALIDATION` for bad options; with `waitFor: "synced"` also with a fatal start
 * error (`MODEL_MISMATCH`, `TRUNCATED`, `UNSUPPORTED_FORMAT`, `PERMISSION_DENIED`, ...). An
 * unreachable log is not fatal: the replica resolves with its stored state and status `offline`
 * and keeps trying.
 */
export async function createSynchronizer<S, C extends CommandMap<S>>(
  options: CreateSynchronizerOptions<S, C>,
): Promise<StateSynchronizer<S, C>> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw validation("invalid createSynchronizer options", parsed.error);
  const sync = new Synchronizer<S, C>(options);
  try {
    await sync.start();
  } catch (e) {
    await sync.close().catch(() => undefined);
    throw e;
  }
  return sync;
}

class Synchronizer<S, C extends CommandMap<S>> implements StateSynchronizer<S, C> {
  readonly clientId: string;
  readonly model: Model<S, C>;
  readonly stats: SyncStats = {
    entriesFetched: 0,
    entriesApplied: 0,
    entriesSkipped: 0,
    bytesFetched: 0,
    appends: 0,
    conflicts: 0,
    attempts: 0,
    resends: 0,
    snapshotsSaved: 0,
    snapshotsRestored: 0,
  };

  private readonly log: RevisionedLog;
  private readonly store: SnapshotStore | undefined;
  private readonly snapshotKey: string;
  private readonly snapshotEvery: number;
  private readonly live: boolean;
  private readonly options: CreateSynchronizerOptions<S, C>;

  private current: S;
  private rev = 0;
  private lastMessageId: string | undefined;
  private genesisSeen = false;
  private logIdentity: string | undefined;
  private restored: SnapshotRecord | undefined;
  private statusValue: SyncStatus = "connecting";
  private stall: StateSyncError | undefined;
  private closed = false;
  private connected = false;

  private follower: LogFollower | undefined;
  private readonly subscribers = new Set<(state: Immutable<S>, revision: number) => void>();
  private readonly listeners = {
    error: new Set<SyncEvents["error"]>(),
    status: new Set<SyncEvents["status"]>(),
  };
  private readonly waiters = new Set<Waiter>();
  private notifyScheduled = false;
  private queue: PendingUpdate<S>[] = [];
  private writing: Promise<void> | undefined;
  private reading: Promise<void> = Promise.resolve();
  private consumedSinceSnapshot = 0;
  private saving: Promise<void> = Promise.resolve();
  private unwatchStatus: (() => void) | undefined;
  private messageCounter = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: CreateSynchronizerOptions<S, C>) {
    this.options = options;
    this.log = options.log;
    this.model = options.model;
    this.store = options.snapshots || undefined;
    this.snapshotKey = options.snapshotKey ?? options.model.name;
    this.snapshotEvery = options.snapshotEvery ?? 100;
    this.live = options.live ?? true;
    this.clientId = options.clientId ?? randomId(8);
    this.current = options.model.initial;
    if (options.onError) this.listeners.error.add(options.onError);
    if (options.onStatus) this.listeners.status.add(options.onStatus);
  }

  // ------------------------------------------------------------------ reads

  get state(): Immutable<S> {
    return this.current as Immutable<S>;
  }
  get revision(): number {
    return this.rev;
  }
  get status(): SyncStatus {
    return this.statusValue;
  }
  get stallReason(): StateSyncError | undefined {
    return this.stall;
  }

  subscribe(listener: (state: Immutable<S>, revision: number) => void): () => void {
    if (typeof listener !== "function")
      throw new StateSyncError("VALIDATION", "listener must be a function");
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  on<E extends keyof SyncEvents>(event: E, listener: SyncEvents[E]): () => void {
    const set = this.listeners[event] as Set<SyncEvents[E]> | undefined;
    if (set === undefined)
      throw new StateSyncError("VALIDATION", `unknown event "${String(event)}"`);
    if (typeof listener !== "function")
      throw new StateSyncError("VALIDATION", "listener must be a function");
    set.add(listener);
    return () => set.delete(listener);
  }

  // ------------------------------------------------------------------ start

  async start(): Promise<void> {
    this.unwatchStatus = this.log.watchStatus((s) => this.onLogStatus(s));
    await this.restoreSnapshot();
    const connecting = this.connect();
    if (this.options.waitFor === "restored") {
      connecting.catch(() => undefined);
      return;
    }
    await connecting;
  }

  private async restoreSnapshot(): Promise<void> {
    if (!this.store) return;
    let record: SnapshotRecord | undefined;
    try {
      record = await this.store.load(this.snapshotKey);
    } catch (e) {
      this.report(
        asError(
          e,
          "CORRUPT_SNAPSHOT",
          "the local snapshot could not be read; rebuilding from the log",
        ),
      );
      await this.store.delete(this.snapshotKey).catch(() => undefined);
      return;
    }
    if (record === undefined) return;
    const problem =
      record.model !== this.model.name
        ? `it belongs to model ${record.model}`
        : !this.model.state.safeParse(record.state).success
          ? "its state fails the model's schema"
          : findNonJson(record.state) !== undefined
            ? "its state is not JSON"
            : undefined;
    if (problem !== undefined) {
      this.report(
        new StateSyncError("CORRUPT_SNAPSHOT", `discarding the local snapshot: ${problem}`),
      );
      await this.store.delete(this.snapshotKey).catch(() => undefined);
      return;
    }
    this.current = freeze(record.state as S, true);
    this.rev = record.revision;
    this.lastMessageId = record.messageId;
    this.logIdentity = record.logIdentity;
    this.genesisSeen = true;
    this.restored = record;
    this.stats.snapshotsRestored += 1;
  }

  /** Checks the restored snapshot against the log, writes genesis, catches up, follows. */
  private async connect(): Promise<void> {
    try {
      const info = await this.log.info();
      if (this.restored) await this.checkSnapshotAgainstLog(info);
      this.logIdentity = info.identity;
      let latest = info.latestRevision;
      if (latest === 0 && this.rev === 0) latest = await this.appendGenesis();
      await this.readRange(latest);
      if (this.stall) throw this.stall;
      this.connected = true;
      if (this.live) this.startFollowing();
      this.setStatus(this.log.status === "online" ? "live" : "offline");
    } catch (e) {
      if (this.closed) return;
      if (isStateSyncError(e, "UNAVAILABLE")) {
        this.setStatus("offline");
        this.scheduleReconnect();
        return;
      }
      const error = asError(e, "UNAVAILABLE", "could not open the log");
      this.stallWith(error);
      throw error;
    }
  }

  private scheduleReconnect(attempt = 0): void {
    if (this.closed || this.reconnectTimer) return;
    const delay = Math.min(5_000, 100 * 2 ** attempt) * (0.5 + Math.random() / 2);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.closed || this.connected) return;
      this.connect().then(
        () => {
          if (!this.connected && !this.closed && !this.stall) this.scheduleReconnect(attempt + 1);
        },
        () => undefined,
      );
    }, delay);
  }

  private async checkSnapshotAgainstLog(info: {
    identity: string;
    latestRevision: number;
    firstRevision: number;
  }): Promise<void> {
    const record = this.restored!;
    this.restored = undefined;
    let problem: string | undefined;
    if (record.logIdentity !== info.identity)
      problem = "the log was recreated since it was written";
    else if (record.revision > info.latestRevision)
      problem = `it is ahead of the log (revision ${record.revision} > ${info.latestRevision})`;
    else if (record.revision > 0) {
      const entry = await this.log.entryAt(record.revision);
      if (entry === undefined) {
        if (info.firstRevision <= record.revision)
          problem = `the log has no entry at revision ${record.revision}`;
      } else if (entry.messageId !== record.messageId) {
        problem = `the log's entry at revision ${record.revision} is another one`;
      }
    }
    if (problem === undefined) return;
    this.report(
      new StateSyncError("CORRUPT_SNAPSHOT", `discarding the local snapshot: ${problem}`),
    );
    await this.store?.delete(this.snapshotKey).catch(() => undefined);
    this.stats.snapshotsRestored -= 1;
    this.current = this.model.initial;
    this.rev = 0;
    this.lastMessageId = undefined;
    this.genesisSeen = false;
    this.scheduleNotify();
  }

  private async appendGenesis(): Promise<number> {
    const entry: Entry = {
      v: 1,
      kind: "genesis",
      ts: Date.now(),
      client: this.clientId,
      model: this.model.name,
      version: this.model.version,
      initialHash: this.model.initialHash,
    };
    const id = `genesis-${this.model.name}-${this.model.version}-${this.model.initialHash.slice(0, 16)}`;
    try {
      return (await this.log.appendConditional(encodeEntry(entry), 0, id)).revision;
    } catch (e) {
      if (!isStateSyncError(e, "CONFLICT")) throw e;
      return (await this.log.info()).latestRevision;
    }
  }

  private startFollowing(): void {
    if (this.follower || this.closed || this.stall) return;
    this.follower = this.log.follow(this.rev + 1, {
      onEntry: (entry) => this.consume(entry),
      onError: (error) => {
        const e = asError(error, "UNAVAILABLE", "following the log failed");
        this.report(e);
        void this.restartFollowing();
      },
    });
  }

  private async restartFollowing(): Promise<void> {
    const f = this.follower;
    this.follower = undefined;
    await f?.stop().catch(() => undefined);
    if (this.closed || this.stall) return;
    await sleep(250);
    this.startFollowing();
  }

  private onLogStatus(status: "online" | "offline"): void {
    if (this.closed || this.stall) return;
    if (status === "offline") {
      this.setStatus("offline");
      return;
    }
    if (!this.connected) {
      this.scheduleReconnect();
      return;
    }
    this.setStatus("live");
    // The follower resumes by itself; a catch-up closes any gap it cannot see.
    this.fetchUpdates().catch(() => undefined);
  }

  // ------------------------------------------------------------------ applying entries

  /** Consumes one entry from the log, in order. Synchronous: never interleaves with another. */
  private consume(entry: LogEntry): void {
    if (this.closed || this.stall || entry.revision <= this.rev) return;
    this.stats.entriesFetched += 1;
    this.stats.bytesFetched += entry.data.byteLength;
    if (this.log.contiguous && this.rev > 0 && entry.revision !== this.rev + 1) {
      return this.stallWith(this.truncated(entry.revision));
    }
    const decoded = decodeEntry(entry.data);
    if (!decoded.ok) {
      if (decoded.error.code === "UNSUPPORTED_FORMAT")
        return this.stallWith(withRevision(decoded.error, entry.revision));
      return this.skip(entry, decoded.error);
    }
    const e = decoded.entry;
    if (!this.genesisSeen) {
      if (e.kind !== "genesis") return this.stallWith(this.truncated(entry.revision));
      const mismatch =
        e.model !== this.model.name
          ? `the log belongs to model "${e.model}", not "${this.model.name}"`
          : e.version === this.model.version && e.initialHash !== this.model.initialHash
            ? `the log was created by ${e.model} v${e.version} with another initial state`
            : undefined;
      if (mismatch)
        return this.stallWith(
          new StateSyncError("MODEL_MISMATCH", mismatch, { details: { revision: entry.revision } }),
        );
      this.genesisSeen = true;
      return this.advance(entry);
    }
    if (e.kind === "genesis")
      return this.skip(entry, new StateSyncError("CORRUPT_ENTRY", "a second genesis entry"));
    if (e.kind === "update" && e.base !== this.rev) {
      if (!this.log.contiguous) return this.stallWith(this.truncated(entry.revision));
      return this.skip(
        entry,
        new StateSyncError(
          "CORRUPT_ENTRY",
          `conditional entry based on ${e.base}, not ${this.rev}`,
        ),
      );
    }
    const outcome = applyEntry(this.model, this.current, e, this.rev);
    if (outcome.kind === "stall")
      return this.stallWith(withRevision(outcome.error, entry.revision));
    if (outcome.kind === "noop") this.report(withRevision(outcome.error, entry.revision));
    else this.current = outcome.state;
    this.stats.entriesApplied += 1;
    this.advance(entry);
  }

  private truncated(revision: number): StateSyncError {
    return new StateSyncError(
      "TRUNCATED",
      `the log no longer holds the entries after revision ${this.rev} (next retained: ${revision})`,
      { details: { revision: this.rev, next: revision } },
    );
  }

  private skip(entry: LogEntry, error: StateSyncError): void {
    this.stats.entriesSkipped += 1;
    this.report(withRevision(error, entry.revision));
    this.advance(entry);
  }

  private advance(entry: LogEntry): void {
    this.rev = entry.revision;
    this.lastMessageId = entry.messageId;
    this.consumedSinceSnapshot += 1;
    this.scheduleNotify();
    for (const w of this.waiters) {
      if (w.revision <= this.rev) {
        this.waiters.delete(w);
        w.resolve();
      }
    }
    if (this.snapshotEvery > 0 && this.consumedSinceSnapshot >= this.snapshotEvery) {
      void this.saveSnapshot().catch(() => undefined);
    }
  }

  private scheduleNotify(): void {
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    queueMicrotask(() => {
      this.notifyScheduled = false;
      const state = this.state;
      const revision = this.rev;
      for (const l of [...this.subscribers]) {
        try {
          l(state, revision);
        } catch (cause) {
          this.report(
            new StateSyncError("LISTENER_FAILED", `a subscriber threw: ${String(cause)}`, {
              cause,
            }),
          );
        }
      }
    });
  }

  private stallWith(error: StateSyncError): void {
    if (this.stall || this.closed) return;
    this.stall = error;
    this.report(error);
    this.setStatus("stalled");
    const f = this.follower;
    this.follower = undefined;
    void f?.stop().catch(() => undefined);
    for (const w of this.waiters) w.reject(error);
    this.waiters.clear();
  }

  /** Reads entries up to `target` from the log (serialized with other reads). */
  private readRange(target: number): Promise<void> {
    const run = async () => {
      if (this.rev >= target || this.stall) return;
      for await (const entry of this.log.read(this.rev + 1, target)) {
        this.consume(entry);
        if (this.stall || this.closed) return;
      }
      if (this.rev < target && !this.stall && !this.closed) {
        this.stallWith(this.truncated(target));
      }
    };
    const p = this.reading.then(run, run);
    this.reading = p.catch(() => undefined);
    return p;
  }

  private async catchUp(target?: number): Promise<void> {
    const latest = target ?? (await this.log.info()).latestRevision;
    if (this.rev >= latest) return;
    if (this.follower && this.log.status === "online") {
      const reached = await this.waitUntil(latest, FOLLOWER_GRACE_MS);
      if (reached) return;
    }
    await this.readRange(latest);
  }

  private waitUntil(revision: number, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter: Waiter = {
        revision,
        resolve: () => {
          clearTimeout(timer);
          resolve(true);
        },
        reject: () => {
          clearTimeout(timer);
          resolve(false);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        resolve(false);
      }, ms);
      this.waiters.add(waiter);
    });
  }

  private assertUsable(): void {
    if (this.closed) throw new StateSyncError("CLOSED", "the synchronizer is closed");
    if (this.stall) throw this.stall;
  }

  async fetchUpdates(): Promise<number> {
    this.assertUsable();
    await this.catchUp();
    this.assertUsable();
    if (!this.connected) {
      this.connected = true;
      if (this.live) this.startFollowing();
      this.setStatus("live");
    }
    return this.rev;
  }

  waitFor(revision: number, options: { signal?: AbortSignal } = {}): Promise<void> {
    if (!Number.isSafeInteger(revision) || revision < 0) {
      return Promise.reject(
        new StateSyncError("VALIDATION", "revision must be a non-negative integer"),
      );
    }
    if (this.rev >= revision) return Promise.resolve();
    try {
      this.assertUsable();
    } catch (e) {
      return Promise.reject(e);
    }
    if (!this.live) this.fetchUpdates().catch(() => undefined);
    return new Promise((resolve, reject) => {
      const signal = options.signal;
      if (signal?.aborted) return reject(abortError(signal));
      const onAbort = () => {
        this.waiters.delete(waiter);
        reject(abortError(signal!));
      };
      const waiter: Waiter = {
        revision,
        resolve: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        reject: (e) => {
          signal?.removeEventListener("abort", onAbort);
          reject(e);
        },
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  async synced(): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.fetchUpdates();
      } catch (e) {
        if (!isStateSyncError(e, "UNAVAILABLE")) throw e;
        await sleep(Math.min(2_000, 50 * 2 ** attempt));
      }
    }
  }

  // ------------------------------------------------------------------ writing

  update<R>(recipe: Recipe<S, R>, options?: UpdateOptions): Promise<UpdateResult<S, R>>;
  update<K extends keyof C & string>(
    command: K,
    args: CommandArgs<C[K]>,
    options?: UpdateOptions,
  ): Promise<UpdateResult<S, void>>;
  update(first: unknown, second?: unknown, third?: unknown): Promise<UpdateResult<S, unknown>> {
    try {
      this.assertUsable();
      let pending: Omit<PendingUpdate<S>, "resolve" | "reject" | "attempts">;
      if (typeof first === "function") {
        const opts = this.parseUpdateOptions(second);
        pending = { run: first as PendingUpdate<S>["run"], ...opts };
      } else if (typeof first === "string") {
        const { definition, args } = this.parseCommand(first, second);
        const opts = this.parseUpdateOptions(third);
        pending = {
          run: (draft, ctx) => void definition.apply(draft as never, args, ctx),
          command: { name: first, args: second },
          ...opts,
        };
      } else {
        throw new StateSyncError("VALIDATION", "update takes a recipe function or a command name");
      }
      return new Promise((resolve, reject) => {
        this.queue.push({ ...pending, attempts: 0, resolve, reject });
        this.kickWriter();
      });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  private parseUpdateOptions(options: unknown): {
    maxAttempts: number;
    outcomeTimeoutMs: number;
    signal: AbortSignal | undefined;
  } {
    const parsed = updateOptionsSchema.safeParse(options);
    if (!parsed.success) throw validation("invalid update options", parsed.error);
    return {
      maxAttempts: parsed.data?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
      outcomeTimeoutMs: parsed.data?.outcomeTimeoutMs ?? DEFAULT_OUTCOME_TIMEOUT_MS,
      signal: parsed.data?.signal,
    };
  }

  private parseCommand(name: string, args: unknown) {
    const definition = Object.hasOwn(this.model.commands, name)
      ? this.model.commands[name]
      : undefined;
    if (definition === undefined) {
      throw new StateSyncError(
        "UNKNOWN_COMMAND",
        `model ${this.model.name} has no command "${name}"`,
        { details: { command: name } },
      );
    }
    const parsed = definition.args.safeParse(args);
    if (!parsed.success) throw validation(`invalid arguments for command "${name}"`, parsed.error);
    const problem = findNonJson(args);
    if (problem !== undefined)
      throw new StateSyncError("VALIDATION", `arguments of "${name}" are not JSON (${problem})`);
    return { definition, args: parsed.data as unknown };
  }

  private kickWriter(): void {
    if (this.writing) return;
    this.writing = (async () => {
      try {
        while (this.queue.length > 0) {
          const batch = this.queue.splice(0, MAX_BATCH);
          await this.commitBatch(batch);
        }
      } finally {
        this.writing = undefined;
      }
    })();
  }

  /** Runs a batch of queued recipes as one conditional append until it commits or each fails. */
  private async commitBatch(batch: PendingUpdate<S>[]): Promise<void> {
    let ops = batch;
    for (let round = 0; ops.length > 0; round++) {
      ops = ops.filter((op) => {
        if (this.closed || this.stall) {
          op.reject(
            this.closed ? new StateSyncError("CLOSED", "the synchronizer is closed") : this.stall,
          );
          return false;
        }
        if (op.signal?.aborted) {
          op.reject(abortError(op.signal));
          return false;
        }
        return true;
      });
      if (ops.length === 0) return;

      const base = this.rev;
      const timestamp = Date.now();
      const seed = randomSeed();
      const runCtx = entryContext(base, timestamp, seed, this.clientId);
      let draftState = this.current;
      const patches: Patch[] = [];
      const commands: { name: string; args: unknown }[] = [];
      const results = new Map<PendingUpdate<S>, unknown>();
      for (const op of ops) {
        try {
          let result: unknown;
          const [next, p] = produceWithPatches(draftState, (draft) => {
            result = op.run(draft, runCtx);
            if (
              result !== null &&
              typeof result === "object" &&
              typeof (result as { then?: unknown }).then === "function"
            ) {
              (result as Promise<unknown>).then(undefined, () => undefined);
              throw new StateSyncError(
                "VALIDATION",
                "recipes must be synchronous (an async recipe returned a promise)",
              );
            }
          });
          if (p.length > 0) {
            const check = this.model.state.safeParse(next);
            if (!check.success)
              throw validation("the update would make the state invalid", check.error);
            const problem = findNonJson(next);
            if (problem !== undefined)
              throw new StateSyncError(
                "VALIDATION",
                `the update would put a non-JSON value in the state (${problem})`,
              );
          }
          draftState = next as S;
          patches.push(...p);
          if (op.command) commands.push(op.command);
          results.set(op, result);
        } catch (e) {
          op.reject(e);
        }
      }
      ops = ops.filter((op) => results.has(op));
      if (ops.length === 0) return;
      if (patches.length === 0) {
        for (const op of ops)
          op.resolve({
            revision: base,
            state: this.state,
            result: results.get(op),
            attempts: Math.max(1, op.attempts),
          });
        return;
      }
      const entry: Entry = {
        v: 1,
        kind: "update",
        base,
        ts: timestamp,
        seed,
        client: this.clientId,
        patches: patches as StoredPatch[],
        ...(commands.length > 0 ? { commands } : {}),
      };
      const data = encodeEntry(entry);
      const limit = await this.maxEntryBytes().catch(() => Infinity);
      if (data.byteLength > limit) {
        if (ops.length > 1) {
          // Too large together: commit them one by one.
          this.queue.unshift(...ops.slice(1));
          ops = ops.slice(0, 1);
          continue;
        }
        ops[0]!.reject(
          new StateSyncError(
            "PAYLOAD_TOO_LARGE",
            `the update is ${data.byteLength} bytes; the log accepts at most ${limit}`,
            {
              details: { bytes: data.byteLength, maxEntryBytes: limit },
            },
          ),
        );
        return;
      }
      const check = decodeEntry(data);
      if (!check.ok) {
        for (const op of ops)
          op.reject(
            new StateSyncError(
              "VALIDATION",
              `the update cannot be stored: ${check.error.message}`,
              { cause: check.error },
            ),
          );
        return;
      }
      for (const op of ops) op.attempts += 1;
      this.stats.attempts += 1;
      const timeout = Math.min(...ops.map((o) => o.outcomeTimeoutMs));
      try {
        const revision = await this.appendExactlyOnce(data, base, timeout);
        await this.applyOwn(revision, data);
        for (const op of ops)
          op.resolve({
            revision,
            state: this.state,
            result: results.get(op),
            attempts: op.attempts,
          });
        return;
      } catch (e) {
        if (!isStateSyncError(e, "CONFLICT")) {
          for (const op of ops) op.reject(e);
          return;
        }
        this.stats.conflicts += 1;
        ops = ops.filter((op) => {
          if (op.attempts < op.maxAttempts) return true;
          op.reject(
            new StateSyncError("RETRY_LIMIT", `the update conflicted ${op.attempts} times`, {
              cause: e,
              details: { attempts: op.attempts },
            }),
          );
          return false;
        });
        try {
          await this.catchUp(e instanceof AppendConflictError ? e.latestRevision : undefined);
          await sleep(backoffDelay(round));
        } catch (err) {
          for (const op of ops) op.reject(err);
          return;
        }
      }
    }
  }

  private cachedMaxEntryBytes: number | undefined;
  private async maxEntryBytes(): Promise<number> {
    if (this.cachedMaxEntryBytes === undefined)
      this.cachedMaxEntryBytes = (await this.log.info()).maxEntryBytes;
    return this.cachedMaxEntryBytes;
  }

  private nextMessageId(): string {
    this.messageCounter += 1;
    return `${this.clientId}-${this.messageCounter}-${randomId(4)}`;
  }

  /**
   * Appends `data` exactly once (jetstream-notes, "Lost acknowledgements"): on an unknown outcome
   * re-sends the same bytes with the same message id until the deadline; a conflict on a re-send
   * is resolved by looking the message id up after `expected`.
   */
  private async appendExactlyOnce(
    data: Uint8Array,
    expected: number | undefined,
    timeoutMs: number,
  ): Promise<number> {
    const messageId = this.nextMessageId();
    const deadline = Date.now() + timeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const result =
          expected === undefined
            ? await this.log.appendUnconditional(data, messageId)
            : await this.log.appendConditional(data, expected, messageId);
        this.stats.appends += 1;
        return result.revision;
      } catch (e) {
        if (isStateSyncError(e, "CONFLICT") && attempt > 0 && expected !== undefined) {
          try {
            const found = await this.log.findByMessageId(messageId, expected);
            if (found !== undefined) {
              this.stats.appends += 1;
              return found;
            }
            throw e;
          } catch (lookup) {
            if (!isStateSyncError(lookup, "UNAVAILABLE")) throw lookup;
          }
        } else if (!isStateSyncError(e, "UNAVAILABLE")) {
          throw e;
        }
        if (Date.now() >= deadline || this.closed) {
          throw new StateSyncError(
            "UNKNOWN_OUTCOME",
            `the append may or may not be stored: the log could not be reached within ${timeoutMs} ms`,
            { cause: e, details: { messageId } },
          );
        }
        this.stats.resends += 1;
        await sleep(Math.min(deadline - Date.now(), 50 * 2 ** Math.min(attempt, 6)));
      }
    }
  }

  /** Applies this client's own entry as decoded from the wire, in log order. */
  private async applyOwn(revision: number, data: Uint8Array): Promise<void> {
    if (this.rev >= revision) return;
    const previous = this.reading;
    await previous;
    if (this.rev < revision) {
      const entryBase = (decodeEntry(data) as { ok: true; entry: { base?: number } }).entry.base;
      if (entryBase === this.rev) this.consume({ revision, data });
      else await this.catchUp(revision);
    }
    if (this.stall) throw this.stall;
  }

  updateUnconditionally<K extends keyof C & string>(
    command: K,
    args: CommandArgs<C[K]>,
    options?: UpdateOptions,
  ): Promise<{ readonly revision: number }> {
    return (async () => {
      this.assertUsable();
      if (typeof command !== "string")
        throw new StateSyncError("VALIDATION", "command must be a command name");
      this.parseCommand(command, args);
      const opts = this.parseUpdateOptions(options);
      if (opts.signal?.aborted) throw abortError(opts.signal);
      const entry: Entry = {
        v: 1,
        kind: "command",
        ts: Date.now(),
        seed: randomSeed(),
        client: this.clientId,
        name: command,
        args: args as unknown,
      };
      const data = encodeEntry(entry);
      const limit = await this.maxEntryBytes().catch(() => Infinity);
      if (data.byteLength > limit) {
        throw new StateSyncError(
          "PAYLOAD_TOO_LARGE",
          `the command is ${data.byteLength} bytes; the log accepts at most ${limit}`,
          {
            details: { bytes: data.byteLength, maxEntryBytes: limit },
          },
        );
      }
      const check = decodeEntry(data);
      if (!check.ok)
        throw new StateSyncError(
          "VALIDATION",
          `the command cannot be stored: ${check.error.message}`,
          { cause: check.error },
        );
      const revision = await this.appendExactlyOnce(data, undefined, opts.outcomeTimeoutMs);
      return { revision };
    })();
  }

  // ------------------------------------------------------------------ snapshots, events, close

  saveSnapshot(): Promise<void> {
    if (!this.store || this.logIdentity === undefined || this.rev === 0 || !this.genesisSeen)
      return this.saving;
    const record: SnapshotRecord = {
      format: 1,
      revision: this.rev,
      state: this.current,
      logIdentity: this.logIdentity,
      messageId: this.lastMessageId,
      model: this.model.name,
      modelVersion: this.model.version,
      savedAt: Date.now(),
    };
    this.consumedSinceSnapshot = 0;
    const store = this.store;
    const run = async () => {
      try {
        await store.save(this.snapshotKey, record);
        this.stats.snapshotsSaved += 1;
      } catch (e) {
        this.report(asError(e, "UNAVAILABLE", "saving the local snapshot failed"));
        throw e;
      }
    };
    const p = this.saving.then(run, run);
    this.saving = p.catch(() => undefined);
    return p;
  }

  private setStatus(status: SyncStatus): void {
    if (this.statusValue === status) return;
    if (this.statusValue === "closed") return;
    if (this.statusValue === "stalled" && status !== "closed") return;
    this.statusValue = status;
    for (const l of [...this.listeners.status]) {
      try {
        l(status);
      } catch (cause) {
        this.report(
          new StateSyncError("LISTENER_FAILED", `a status listener threw: ${String(cause)}`, {
            cause,
          }),
        );
      }
    }
  }

  private report(error: StateSyncError): void {
    for (const l of [...this.listeners.error]) {
      try {
        l(error);
      } catch {
        // An error listener that throws has nowhere left to report to.
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const closedError = new StateSyncError("CLOSED", "the synchronizer is closed");
    for (const op of this.queue.splice(0)) op.reject(closedError);
    await this.writing?.catch(() => undefined);
    const f = this.follower;
    this.follower = undefined;
    await f?.stop().catch(() => undefined);
    this.unwatchStatus?.();
    for (const w of this.waiters) w.reject(closedError);
    this.waiters.clear();
    await this.saving;
    await this.saveSnapshot().catch(() => undefined);
    this.setStatus("closed");
    if (this.options.ownsLog) await this.log.close().catch(() => undefined);
    await this.options.onClose?.();
  }
}

function asError(e: unknown, code: StateSyncError["code"], message: string): StateSyncError {
  if (e instanceof StateSyncError) return e;
  return new StateSyncError(code, `${message}: ${String(e)}`, { cause: e });
}

function withRevision(error: StateSyncError, revision: number): StateSyncError {
  return new StateSyncError(error.code, `${error.message} (entry at revision ${revision})`, {
    cause: error.cause ?? error,
    details: { ...error.details, revision },
  });
}
