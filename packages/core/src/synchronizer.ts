import { current, freeze, isDraft, produceWithPatches, type Immutable, type Patch } from "immer";
import { z } from "zod/v4";
import { entryContext } from "./apply.js";
import { abortError, backoffDelay, sleep } from "./backoff.js";
import { CompactionPolicy } from "./compaction-policy.js";
import {
  decodeEntry,
  encodeEntry,
  type DecodeResult,
  type Entry,
  type StoredPatch,
} from "./entry.js";
import { AppendConflictError, isStateSyncError, StateSyncError } from "./errors.js";
import { readHistory, rebuildStateAt, type HistoryEntry, type HistoryOptions } from "./history.js";
import { findNonJson } from "./json.js";
import type { LogEntry, LogFollower, LogInfo, RevisionedLog } from "./log.js";
import type { CommandArgs, CommandMap, Model, UpdateContext } from "./model.js";
import { randomId } from "./prng.js";
import { Replay, type StepResult } from "./replay.js";
import type { SnapshotRecord, SnapshotStore } from "./snapshot-store.js";
import type {
  CompactionResult,
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
/** Entries per writer's turn while several writers contend (see `awaitTurn`). */
const TURN = 8;
/** How long after another writer's update or command a replica considers the log contended (ms). */
const CONTENDED_MS = 250;
/** Least time between two automatic snapshot saves (ms). */
const AUTO_SAVE_MIN_MS = 250;
/** Entries whose writers make up the rotation of turns (see `awaitTurn`). */
const ROTATION_WINDOW = 256;
/** Most turns a queued update sits out before it appends regardless. */
const MAX_TURN_WAITS = 64;
/** Entries a catch-up applies together (in one Immer draft when they allow it). */
const READ_APPLY_BATCH = 256;
/** Most own entries remembered while they travel to the log and back (see `prepare`). */
const MAX_OWN_PENDING = 4_096;

const seedPool = new Uint32Array(256);
let seedNext = seedPool.length;
/** A random 32-bit seed from the platform's CSPRNG, drawn 256 at a time (one draw costs ~1 µs). */
function nextSeed(): number {
  if (seedNext === seedPool.length) {
    crypto.getRandomValues(seedPool);
    seedNext = 0;
  }
  return seedPool[seedNext++]!;
}

const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === "function");

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
    .union([
      z.literal(false),
      z.custom<SnapshotStore>(
        (v) =>
          typeof v === "object" && v !== null && typeof (v as SnapshotStore).load === "function",
        "snapshots must be a SnapshotStore or false",
      ),
    ])
    .optional(),
  snapshotKey: z.string().min(1).optional(),
  snapshotEvery: z.number().int().nonnegative().optional(),
  // Message ids embed it and are capped at 256 bytes with the subject (JetStreamLog): keep it short.
  clientId: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces")
    .optional(),
  live: z.boolean().optional(),
  waitFor: z.enum(["synced", "restored"]).optional(),
  contention: z.enum(["retry", "turns"]).optional(),
  compaction: z
    .union([
      z.literal(false),
      z.object({
        everyEntries: z.number().int().positive().optional(),
        everyBytes: z.number().int().positive().optional(),
        jitter: z.number().min(0).max(10).optional(),
      }),
    ])
    .optional(),
  ownsLog: z.boolean().optional(),
  onClose: fn.optional(),
  onError: fn.optional(),
  onStatus: fn.optional(),
  connectionErrors: fn.optional(),
});

const updateOptionsSchema = z
  .object({
    maxAttempts: z.number().int().positive().optional(),
    signal: z.custom<AbortSignal>((v) => v === undefined || v instanceof AbortSignal).optional(),
    outcomeTimeoutMs: z.number().positive().optional(),
  })
  .optional();

const DEFAULT_UPDATE_OPTIONS = {
  maxAttempts: DEFAULT_MAX_ATTEMPTS,
  outcomeTimeoutMs: DEFAULT_OUTCOME_TIMEOUT_MS,
  signal: undefined as AbortSignal | undefined,
};

function validation(what: string, error: z.ZodError): StateSyncError {
  return new StateSyncError("VALIDATION", `${what}: ${z.prettifyError(error)}`, { cause: error });
}

/** A conditional update waiting in the local queue. */
interface PendingUpdate<S> {
  run: (draft: unknown, ctx: UpdateContext) => unknown;
  command?: { name: string; args: unknown };
  maxAttempts: number;
  outcomeTimeoutMs: number;
  signal: AbortSignal | undefined;
  attempts: number;
  /** Turns it sat out for other writers (see `awaitTurn`). */
  turnsWaited: number;
  resolve: (r: UpdateResult<S, unknown>) => void;
  reject: (e: unknown) => void;
}

/** An encoded entry of this client and its decoding (`prepare`). */
interface OwnEntry {
  data: Uint8Array;
  decoded: DecodeResult;
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
 * and keeps trying in the background.
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
    compactions: 0,
  };

  private readonly log: RevisionedLog;
  private readonly store: SnapshotStore | undefined;
  private readonly snapshotKey: string;
  private readonly snapshotEvery: number;
  private readonly live: boolean;
  private readonly options: CreateSynchronizerOptions<S, C>;
  private readonly policy: CompactionPolicy | undefined;
  /** Contention management by turns (`contention: "turns"`) instead of backoff. */
  private readonly turns: boolean;

  private replay: Replay<S, C>;
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
  /** A save that has not started yet (see `saveSnapshot`). */
  private nextSave: Promise<void> | undefined;
  private savesOutstanding = 0;
  private writesPaused = false;
  private lastAutoSave = -Infinity;
  private autoSaveTimer: ReturnType<typeof setTimeout> | undefined;
  private compacting: Promise<CompactionResult> | undefined;
  private unwatchStatus: (() => void) | undefined;
  private readonly unwatchConnection: (() => void) | undefined;
  /** A background connection reported a failed attempt (see `connectionErrors`). */
  private connectionFailed = false;
  private onConnectionFailure: (() => void) | undefined;
  private messageCounter = 0;
  private readonly instanceId = randomId(8);
  /** Entries this client is appending, by message id (see `prepare`). */
  private readonly own = new Map<string, OwnEntry>();
  // contention management (see awaitTurn)
  private contendedAt = -Infinity;
  private lastWriterWasMe = false;
  /** Writers (client ids) of the last update and command entries, oldest first. */
  private readonly recentWriters: string[] = [];
  private entryIntervalMs = 1;
  private lastEntryAt = 0;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private anchoring: Promise<void> | undefined;
  private cachedMaxEntryBytes: number | undefined;

  constructor(options: CreateSynchronizerOptions<S, C>) {
    this.options = options;
    this.log = options.log;
    this.model = options.model;
    this.store = options.snapshots || undefined;
    this.snapshotKey = options.snapshotKey ?? options.model.name;
    this.snapshotEvery = options.snapshotEvery ?? 100;
    this.live = options.live ?? true;
    this.clientId = options.clientId ?? randomId(8);
    this.replay = new Replay(options.model, options.log.contiguous);
    this.turns = options.contention === "turns";
    this.policy =
      options.compaction === false ? undefined : new CompactionPolicy(options.compaction);
    if (options.onError) this.listeners.error.add(options.onError);
    if (options.onStatus) this.listeners.status.add(options.onStatus);
    this.unwatchConnection = options.connectionErrors?.((error) => {
      if (this.closed) return;
      this.connectionFailed = true;
      this.onConnectionFailure?.();
      this.report(error);
    });
  }

  // ------------------------------------------------------------------ reads

  get state(): Immutable<S> {
    return this.replay.state as Immutable<S>;
  }
  get revision(): number {
    return this.replay.revision;
  }
  get status(): SyncStatus {
    return this.statusValue;
  }
  get stallReason(): StateSyncError | undefined {
    return this.stall;
  }

  subscribe(listener: (state: Immutable<S>, revision: number) => void): () => void {
    if (typeof listener !== "function") {
      throw new StateSyncError("VALIDATION", "listener must be a function");
    }
    this.subscribers.add(listener);
    return () => this.subscribers.delete(listener);
  }

  on<E extends keyof SyncEvents>(event: E, listener: SyncEvents[E]): () => void {
    const set = (this.listeners as unknown as Record<string, Set<SyncEvents[E]>>)[event];
    if (set === undefined)
      throw new StateSyncError("VALIDATION", `unknown event "${String(event)}"`);
    if (typeof listener !== "function") {
      throw new StateSyncError("VALIDATION", "listener must be a function");
    }
    set.add(listener);
    return () => set.delete(listener);
  }

  history(options?: HistoryOptions): Promise<HistoryEntry[]> {
    return this.usable(() => readHistory(this.log, options));
  }

  stateAt(revision: number): Promise<Immutable<S>> {
    return this.usable(() => rebuildStateAt(this.log, this.model, revision));
  }

  private async usable<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StateSyncError("CLOSED", "the synchronizer is closed");
    return fn();
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
    // Synced, or offline: when the connection made in the background has already failed (the
    // server refused it, the name does not resolve), the replica is offline now; it need not
    // wait for the log's request timeout to say so. It keeps connecting in the background.
    const failed = new Promise<"offline">((resolve) => {
      this.onConnectionFailure = () => resolve("offline");
      if (this.connectionFailed) resolve("offline");
    });
    try {
      const first = await Promise.race([connecting.then(() => "done" as const), failed]);
      if (first === "offline") {
        connecting.catch(() => undefined);
        if (this.statusValue === "connecting") this.setStatus("offline");
      }
    } finally {
      this.onConnectionFailure = undefined;
    }
  }

  private async discardSnapshot(problem: string): Promise<void> {
    this.report(
      new StateSyncError("CORRUPT_SNAPSHOT", `discarding the local snapshot: ${problem}`),
    );
    await this.store?.delete(this.snapshotKey).catch(() => undefined);
  }

  private async restoreSnapshot(): Promise<void> {
    if (!this.store) return;
    let record: SnapshotRecord | undefined;
    try {
      record = await this.store.load(this.snapshotKey);
    } catch (e) {
      await this.discardSnapshot(e instanceof Error ? e.message : String(e));
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
    if (problem !== undefined) return this.discardSnapshot(problem);
    this.replay = new Replay(this.model, this.log.contiguous, {
      state: freeze(record.state as S, true),
      revision: record.revision,
      messageId: record.messageId,
    });
    this.logIdentity = record.logIdentity;
    this.restored = record;
    this.stats.snapshotsRestored += 1;
  }

  /** Checks the restored snapshot against the log, writes genesis, catches up, follows. */
  private async connect(): Promise<void> {
    try {
      const info = await this.log.info();
      this.cachedMaxEntryBytes = info.maxEntryBytes;
      if (this.restored) await this.checkSnapshotAgainstLog(info);
      this.logIdentity = info.identity;
      let latest = info.latestRevision;
      if (latest === 0 && this.revision === 0) latest = await this.appendGenesis();
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

  private async checkSnapshotAgainstLog(info: LogInfo): Promise<void> {
    const record = this.restored!;
    this.restored = undefined;
    let problem: string | undefined;
    if (record.logIdentity !== info.identity) {
      problem = "the log was recreated since it was written";
    } else if (record.revision > info.latestRevision) {
      problem = `it is ahead of the log (revision ${record.revision} > ${info.latestRevision})`;
    } else if (record.revision > 0) {
      const entry = await this.log.entryAt(record.revision);
      if (entry === undefined) {
        // Truncated by a compaction since: the catch-up jumps onto the snapshot entry after it.
        if (info.firstRevision <= record.revision) {
          problem = `the log has no entry at revision ${record.revision}`;
        }
      } else if (entry.messageId !== record.messageId) {
        problem = `the log's entry at revision ${record.revision} is another one`;
      }
    }
    if (problem === undefined) return;
    await this.discardSnapshot(problem);
    this.stats.snapshotsRestored -= 1;
    this.replay = new Replay(this.model, this.log.contiguous);
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
    this.follower = this.log.follow(this.revision + 1, {
      onEntry: (entry) => this.consume(entry),
      onError: (error) => {
        this.report(asError(error, "UNAVAILABLE", "following the log failed"));
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
    this.consumeMany([entry]);
  }

  /**
   * Consumes entries in order (a catch-up hands over a whole batch, which the replay applies in
   * one Immer draft). Synchronous: never interleaves with another.
   */
  private consumeMany(entries: readonly LogEntry[]): void {
    if (this.closed || this.stall) return;
    const fresh: LogEntry[] = [];
    const decoded: Array<DecodeResult | undefined> = [];
    for (const entry of entries) {
      if (entry.revision <= this.revision) continue;
      this.stats.entriesFetched += 1;
      this.stats.bytesFetched += entry.data.byteLength;
      const own = entry.messageId === undefined ? undefined : this.own.get(entry.messageId);
      const mine = own !== undefined && sameBytes(own.data, entry.data);
      if (mine) this.own.delete(entry.messageId!);
      fresh.push(entry);
      decoded.push(mine ? own.decoded : undefined);
    }
    if (fresh.length === 0) return;
    const mine = decoded.map((d) => d !== undefined); // decoded in advance: own entries
    const results = this.replay.stepMany(fresh, decoded);
    this.observeWriters(results, mine);
    for (let i = 0; i < results.length; i++) {
      const result = results[i]!;
      switch (result.kind) {
        case "ignored":
          continue;
        case "stall":
          return this.stallWith(result.error);
        case "skipped":
          this.stats.entriesSkipped += 1;
          this.report(result.error);
          break;
        case "applied":
          if (result.entry.kind === "update" || result.entry.kind === "command") {
            this.stats.entriesApplied += 1;
          }
          if (result.error) this.report(result.error);
          break;
      }
      this.afterConsume(fresh[i]!, result.kind === "applied" ? result.entry.kind : undefined);
    }
  }

  private afterConsume(entry: LogEntry, kind: Entry["kind"] | undefined): void {
    this.consumedSinceSnapshot += 1;
    this.scheduleNotify();
    for (const w of this.waiters) {
      if (w.revision <= this.revision) {
        this.waiters.delete(w);
        w.resolve();
      }
    }
    if (this.snapshotEvery > 0 && this.consumedSinceSnapshot >= this.snapshotEvery) {
      this.autoSave();
    }
    if (this.policy) {
      if (kind === "snapshot" || kind === "genesis") this.policy.reset();
      else this.policy.count(entry.data.byteLength);
      if (this.policy.due() && this.statusValue === "live" && !this.compacting) {
        this.compact().then(
          () => this.policy?.succeeded(),
          (e: unknown) => {
            // Losing the race to other writers is not a failure: try again a little later.
            if (isStateSyncError(e, "CONFLICT") || isStateSyncError(e, "RETRY_LIMIT")) {
              return this.policy?.deferred();
            }
            if (this.closed || isStateSyncError(e, "CLOSED")) return; // closing: not a problem
            const error = asError(e, "UNAVAILABLE", "automatic compaction failed");
            if (this.policy?.failed(error)) this.report(error);
          },
        );
      }
    }
  }

  private scheduleNotify(): void {
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    queueMicrotask(() => {
      this.notifyScheduled = false;
      const state = this.state;
      const revision = this.revision;
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
      if (this.revision >= target || this.stall) return;
      const batch: LogEntry[] = [];
      for await (const entry of this.log.read(this.revision + 1, target)) {
        batch.push(entry);
        if (batch.length < READ_APPLY_BATCH) continue;
        this.consumeMany(batch.splice(0));
        if (this.stall || this.closed) return;
      }
      this.consumeMany(batch);
      if (this.stall || this.closed) return;
      if (this.revision < target && !this.stall && !this.closed) {
        this.stallWith(
          new StateSyncError(
            "TRUNCATED",
            `the log no longer holds the entries after revision ${this.revision} (latest: ${target})`,
            { details: { after: this.revision, latest: target } },
          ),
        );
      }
    };
    const p = this.reading.then(run, run);
    this.reading = p.catch(() => undefined);
    return p;
  }

  private async catchUp(target?: number): Promise<void> {
    const latest = target ?? (await this.log.info()).latestRevision;
    if (this.revision >= latest) return;
    if (this.follower && this.log.status === "online") {
      const reached = await this.waitUntil(latest, FOLLOWER_GRACE_MS);
      if (reached) return;
    }
    await this.readRange(latest);
  }

  /**
   * Contention management of a live replica: fair, and with few appends wasted on conflicts.
   * While other writers are active (another writer's update or command in the last
   * `CONTENDED_MS`), writers take turns of `TURN` entries aligned on revisions, round-robin: a
   * writer keeps appending during its turn; the turn's last entry (a multiple of `TURN`) hands
   * the next turn to the writer after it in the sorted ids of the recent writers, which every
   * replica at that revision computes alike from the log. The others wait for their turn. Every
   * wait ends when the log goes quiet (the writer waited for is idle or gone: then whoever waits
   * appends), so this only orders writers and never blocks one. A single writer never waits.
   */
  private async awaitTurn(op: PendingUpdate<S>): Promise<void> {
    for (let i = 0; i < MAX_TURN_WAITS; i++) {
      if (!this.follower || Date.now() - this.contendedAt > CONTENDED_MS) return;
      const r = this.revision;
      if (this.lastWriterWasMe) {
        if (r % TURN !== 0) return; // my turn goes on
        // the end of my turn: let another writer go first, if one is there
        if (!(await this.waitWhileActive(r + 1))) return;
        continue;
      }
      const end = Math.ceil(r / TURN) * TURN;
      if (r < end) {
        if (!(await this.waitWhileActive(end))) return;
        continue;
      }
      if (this.nextInRotation() === this.clientId) return;
      op.turnsWaited += 1;
      if (!(await this.waitWhileActive(r + TURN))) return;
    }
  }

  /** The writer after the last one, in the sorted ids of the recent writers and this one. */
  private nextInRotation(): string {
    const writers = [...new Set(this.recentWriters.slice(-ROTATION_WINDOW))];
    if (!writers.includes(this.clientId)) writers.push(this.clientId);
    writers.sort();
    const last = this.recentWriters[this.recentWriters.length - 1] ?? "";
    return writers.find((w) => w > last) ?? writers[0]!;
  }

  /**
   * Waits until `revision` is reached (true), or until no entry has come for a few times the
   * recent interval between entries (false: the writer we waited for went quiet).
   */
  private async waitWhileActive(revision: number): Promise<boolean> {
    const quietMs = 4 + 4 * Math.min(20, Math.max(0.25, this.entryIntervalMs));
    for (;;) {
      const before = this.revision;
      if (await this.waitUntil(revision, quietMs)) return true;
      if (this.revision === before || this.closed || this.stall) return false;
    }
  }

  /** Notes who wrote the consumed entries (this instance or another writer), and their pace. */
  private observeWriters(results: readonly StepResult[], mine: readonly boolean[]): void {
    if (results.length === 0) return;
    const now = Date.now();
    const gap = (now - this.lastEntryAt) / results.length;
    this.entryIntervalMs += (Math.min(gap, 100) - this.entryIntervalMs) / 8;
    this.lastEntryAt = now;
    if (this.recentWriters.length > 2 * ROTATION_WINDOW) {
      this.recentWriters.splice(0, this.recentWriters.length - ROTATION_WINDOW);
    }
    for (let i = 0; i < results.length; i++) {
      const result = results[i]!;
      if (result.kind === "ignored" || result.kind === "stall") continue;
      this.lastWriterWasMe = mine[i]!;
      if (result.kind !== "applied") continue;
      if (result.entry.kind !== "update" && result.entry.kind !== "command") continue;
      this.recentWriters.push(result.entry.client);
      if (mine[i]) continue;
      this.contendedAt = now;
    }
  }

  private waitUntil(revision: number, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const done = (value: boolean) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        resolve(value);
      };
      const waiter: Waiter = { revision, resolve: () => done(true), reject: () => done(false) };
      const timer = setTimeout(() => done(false), ms);
      this.waiters.add(waiter);
    });
  }

  private assertUsable(): void {
    if (this.closed) throw new StateSyncError("CLOSED", "the synchronizer is closed");
    if (this.stall) throw this.stall;
  }

  async fetchUpdates(): Promise<number> {
    this.assertUsable();
    // Not standing on the log's first entry yet (its genesis could not be written or read when
    // the replica opened): do that first, or fail UNAVAILABLE, rather than call an empty log
    // caught up (found by the cluster test: synced() resolved, and the next update failed).
    if (!this.replay.anchored) await this.anchor();
    await this.catchUp();
    this.assertUsable();
    if (!this.connected) {
      this.connected = true;
      if (this.live) this.startFollowing();
      this.setStatus("live");
    }
    return this.revision;
  }

  waitFor(revision: number, options: { signal?: AbortSignal } = {}): Promise<void> {
    if (!Number.isSafeInteger(revision) || revision < 0) {
      return Promise.reject(
        new StateSyncError("VALIDATION", "revision must be a non-negative integer"),
      );
    }
    if (this.revision >= revision) return Promise.resolve();
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

  async synced(options: { signal?: AbortSignal } = {}): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      if (options.signal?.aborted) throw abortError(options.signal);
      try {
        return await this.fetchUpdates();
      } catch (e) {
        if (!isStateSyncError(e, "UNAVAILABLE")) throw e;
        await sleep(Math.min(2_000, 50 * 2 ** attempt), options.signal);
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
      let pending: Omit<PendingUpdate<S>, "resolve" | "reject" | "attempts" | "turnsWaited">;
      if (typeof first === "function") {
        pending = { run: first as PendingUpdate<S>["run"], ...this.parseUpdateOptions(second) };
      } else if (typeof first === "string") {
        const { definition, args } = this.parseCommand(first, second);
        pending = {
          run: (draft, ctx) => void definition.apply(draft as never, args, ctx),
          command: { name: first, args: second },
          ...this.parseUpdateOptions(third),
        };
      } else {
        throw new StateSyncError("VALIDATION", "update takes a recipe function or a command name");
      }
      return new Promise((resolve, reject) => {
        this.queue.push({ ...pending, attempts: 0, turnsWaited: 0, resolve, reject });
        this.kickWriter();
      });
    } catch (e) {
      return Promise.reject(e);
    }
  }

  private parseUpdateOptions(options: unknown) {
    if (options === undefined) return DEFAULT_UPDATE_OPTIONS;
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
        {
          details: { command: name },
        },
      );
    }
    const parsed = definition.args.safeParse(args);
    if (!parsed.success) throw validation(`invalid arguments for command "${name}"`, parsed.error);
    const problem = findNonJson(args);
    if (problem !== undefined) {
      throw new StateSyncError("VALIDATION", `arguments of "${name}" are not JSON (${problem})`);
    }
    return { definition, args: parsed.data as unknown };
  }

  private kickWriter(): void {
    // (an empty queue would settle the loop before `writing` is even assigned)
    if (this.writing || this.writesPaused || this.queue.length === 0) return;
    this.writing = (async () => {
      try {
        while (this.queue.length > 0 && !this.writesPaused) {
          await this.commitBatch(this.queue.splice(0, MAX_BATCH));
        }
      } finally {
        this.writing = undefined;
      }
    })();
  }

  /**
   * Holds local updates while this replica appends its snapshot entry (so that its own
   * compaction and its own updates never conflict); `false` lets them go again.
   */
  private async pauseWrites(pause: boolean): Promise<void> {
    this.writesPaused = pause;
    if (pause) await this.writing;
    else this.kickWriter();
  }

  /** Runs the recipes of `ops` in order on `state`; rejects those that throw or break the schema. */
  private runRecipes(ops: PendingUpdate<S>[], state: S, ctx: UpdateContext) {
    let next = state;
    const patches: Patch[] = [];
    const commands: { name: string; args: unknown }[] = [];
    const results = new Map<PendingUpdate<S>, unknown>();
    for (const op of ops) {
      try {
        let result: unknown;
        const [produced, p] = produceWithPatches(next, (draft) => {
          result = op.run(draft, ctx);
          // A returned draft would be a revoked proxy once produce returns: hand back a copy.
          if (isDraft(result)) result = current(result);
          if (isThenable(result)) {
            (result as Promise<unknown>).then(undefined, () => undefined);
            throw new StateSyncError(
              "VALIDATION",
              "recipes must be synchronous (this one returned a promise)",
            );
          }
        });
        if (p.length > 0) this.checkState(produced, p);
        next = produced as S;
        patches.push(...p);
        if (op.command) commands.push(op.command);
        results.set(op, result);
      } catch (e) {
        // What the recipe threw reaches the caller unchanged (a command's domain error, say),
        // where the same command appended unconditionally is reported as COMMAND_FAILED.
        op.reject(e);
      }
    }
    return { patches, commands, results };
  }

  /**
   * Checks the state a recipe produced against the model's schema, and that it is still JSON:
   * the state before was, so only the values its patches put in need looking at.
   */
  private checkState(state: unknown, patches: readonly Patch[]): void {
    const check = this.model.state.safeParse(state);
    if (!check.success) throw validation("the update would make the state invalid", check.error);
    for (const patch of patches) {
      if (patch.op === "remove") continue;
      const problem = findNonJson(patch.value);
      if (problem !== undefined) {
        const at = patch.path.map((k) => (typeof k === "number" ? `[${k}]` : `.${k}`)).join("");
        throw new StateSyncError(
          "VALIDATION",
          `the update would put a non-JSON value in the state (${problem.replace(/^\$/, `$${at}`)})`,
        );
      }
    }
  }

  /**
   * Encodes an entry this client is about to append and checks its size and format. Returns the
   * bytes and their decoding, which the replica applies when the entry comes back from the log
   * (so its own entries are decoded once).
   */
  private async prepare(entry: Entry, what: string): Promise<OwnEntry> {
    const data = encodeEntry(entry);
    const limit = await this.maxEntryBytes();
    if (data.byteLength > limit) {
      throw new StateSyncError(
        "PAYLOAD_TOO_LARGE",
        `${what} is ${data.byteLength} bytes; the log accepts at most ${limit}`,
        { details: { bytes: data.byteLength, maxEntryBytes: limit } },
      );
    }
    const check = decodeEntry(data);
    if (!check.ok) {
      throw new StateSyncError("VALIDATION", `${what} cannot be stored: ${check.error.message}`, {
        cause: check.error,
      });
    }
    return { data, decoded: check };
  }

  /** Remembers an entry being appended under `messageId` until it is consumed (or fails). */
  private expectOwn(messageId: string, own: OwnEntry): void {
    if (this.own.size >= MAX_OWN_PENDING) {
      this.own.delete(this.own.keys().next().value as string);
    }
    this.own.set(messageId, own);
  }

  /** Runs a batch of queued recipes as one conditional append until it commits or each fails. */
  private async commitBatch(batch: PendingUpdate<S>[]): Promise<void> {
    let ops = batch;
    for (let round = 0; ops.length > 0; round++) {
      ops = ops.filter((op) => {
        if (this.closed || this.stall) {
          op.reject(this.stall ?? new StateSyncError("CLOSED", "the synchronizer is closed"));
          return false;
        }
        if (op.signal?.aborted) {
          op.reject(abortError(op.signal));
          return false;
        }
        return true;
      });
      if (ops.length === 0) return;

      try {
        await this.anchor();
        if (this.turns) await this.awaitTurn(ops[0]!);
      } catch (e) {
        for (const op of ops) op.reject(e);
        return;
      }
      const base = this.revision;
      const timestamp = Date.now();
      const seed = nextSeed();
      const ctx = entryContext(base, timestamp, seed, this.clientId);
      const { patches, commands, results } = this.runRecipes(ops, this.replay.state, ctx);
      ops = ops.filter((op) => results.has(op));
      if (ops.length === 0) return;
      if (patches.length === 0) {
        // Nothing to append, so no conditional append checks that the recipes read the latest
        // state: ask the log. When it has moved on, catch up and run them again, as after a
        // conflict (Pravega's updateState returns without this check).
        let latest: number;
        try {
          latest = (await this.log.info()).latestRevision;
        } catch (e) {
          for (const op of ops) op.reject(e);
          return;
        }
        if (latest > this.revision) {
          for (const op of ops) op.attempts += 1;
          ops = withAttemptsLeft(ops, "the log moved on");
          try {
            await this.catchUp(latest);
          } catch (e) {
            for (const op of ops) op.reject(e);
            return;
          }
          continue;
        }
        for (const op of ops) {
          op.resolve({
            revision: base,
            state: this.state,
            result: results.get(op),
            attempts: op.attempts + 1, // runs: this one, after any that conflicted
          });
        }
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
      let prepared: OwnEntry;
      try {
        prepared = await this.prepare(entry, "the update");
      } catch (e) {
        if (isStateSyncError(e, "PAYLOAD_TOO_LARGE") && ops.length > 1) {
          // Too large together: commit them one by one.
          this.queue.unshift(...ops.slice(1));
          ops = ops.slice(0, 1);
          continue;
        }
        for (const op of ops) op.reject(e);
        return;
      }
      for (const op of ops) op.attempts += 1;
      this.stats.attempts += 1;
      const data = prepared.data;
      const messageId = this.nextMessageId();
      this.expectOwn(messageId, prepared);
      try {
        const timeout = Math.min(...ops.map((o) => o.outcomeTimeoutMs));
        const signal = ops.length === 1 ? ops[0]!.signal : undefined;
        const revision = await this.appendExactlyOnce(data, base, timeout, messageId, signal);
        await this.applyOwn({ revision, data, messageId }, base);
        for (const op of ops) {
          op.resolve({
            revision,
            state: this.state,
            result: results.get(op),
            attempts: op.attempts,
          });
        }
        return;
      } catch (e) {
        if (!isStateSyncError(e, "CONFLICT")) {
          for (const op of ops) op.reject(e);
          return;
        }
        this.own.delete(messageId);
        this.stats.conflicts += 1;
        ops = withAttemptsLeft(ops, "the update conflicted", e);
        try {
          await this.catchUp(e instanceof AppendConflictError ? e.latestRevision : undefined);
          // With contention: "turns" a live replica waits for its turn instead (awaitTurn).
          if (round > 0 && !(this.turns && this.follower)) {
            // Live: retry as soon as the next entry arrives (up to date, as the winner is), or
            // after the backoff when none comes.
            if (this.follower) await this.waitUntil(this.revision + 1, backoffDelay(round));
            else await sleep(backoffDelay(round));
          }
        } catch (err) {
          for (const op of ops) op.reject(err);
          return;
        }
      }
    }
  }

  private async maxEntryBytes(): Promise<number> {
    if (this.cachedMaxEntryBytes === undefined) {
      try {
        this.cachedMaxEntryBytes = (await this.log.info()).maxEntryBytes;
      } catch {
        return Infinity; // unknown while offline; the log checks again before sending
      }
    }
    return this.cachedMaxEntryBytes;
  }

  /** `<clientId>-<random per instance>-<counter>`: unique without a random draw per append. */
  private nextMessageId(): string {
    this.messageCounter += 1;
    return `${this.clientId}-${this.instanceId}-${this.messageCounter}`;
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
    messageId: string = this.nextMessageId(),
    signal?: AbortSignal,
  ): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let maybeStored = false; // false while every attempt is known not to have been sent
    for (let attempt = 0; ; attempt++) {
      try {
        const result =
          expected === undefined
            ? await this.log.appendUnconditional(data, messageId)
            : await this.log.appendConditional(data, expected, messageId);
        this.stats.appends += 1;
        return result.revision;
      } catch (e) {
        let failure: unknown = e;
        if (isStateSyncError(e, "CONFLICT") && attempt > 0 && expected !== undefined) {
          try {
            const found = await this.findOwnEntry(messageId, expected);
            if (found !== undefined) {
              this.stats.appends += 1;
              return found;
            }
          } catch (lookup) {
            if (!isStateSyncError(lookup, "UNAVAILABLE")) {
              throw maybeStored ? outcomeUnknown(lookup, messageId) : lookup;
            }
            failure = lookup;
          }
          if (isStateSyncError(failure, "CONFLICT")) throw failure;
        } else if (!isStateSyncError(e, "UNAVAILABLE")) {
          // After an attempt whose outcome is unknown, a re-send that fails for another reason
          // (denied, stream gone, ...) says nothing about that first attempt.
          throw maybeStored ? outcomeUnknown(e, messageId) : e;
        }
        if (!(isStateSyncError(failure) && failure.details.notSent === true)) maybeStored = true;
        if (!maybeStored && (Date.now() >= deadline || this.closed || signal?.aborted)) {
          // Nothing was ever sent: the outcome is known, the caller may simply try again.
          throw signal?.aborted && !this.closed ? abortError(signal) : failure;
        }
        if (Date.now() >= deadline || this.closed || signal?.aborted) {
          throw new StateSyncError(
            "UNKNOWN_OUTCOME",
            `the append may or may not be stored: the log could not be reached within ${timeoutMs} ms`,
            { cause: failure, details: { messageId } },
          );
        }
        this.stats.resends += 1; // counted when decided (before the wait)
        // The signal ends the wait at once: then nothing more is sent, and the outcome is what
        // the attempts so far leave it (ABORTED when none was sent, else UNKNOWN_OUTCOME).
        const wait = Math.min(deadline - Date.now(), 50 * 2 ** Math.min(attempt, 6));
        await sleep(wait, signal).catch(() => undefined);
        if (signal?.aborted && !this.closed) {
          if (!maybeStored) throw abortError(signal);
          throw new StateSyncError(
            "UNKNOWN_OUTCOME",
            "the append may or may not be stored: aborted while its outcome was unknown",
            { cause: failure, details: { messageId } },
          );
        }
      }
    }
  }

  /**
   * Where an append with `messageId` based on `expected` landed, if it did: right after
   * `expected` in the log; or, when a compaction truncated that position away, in this replica's
   * recent entries or the `recent` list of the snapshot entry the log now starts with.
   */
  private async findOwnEntry(messageId: string, expected: number): Promise<number | undefined> {
    const found = await this.log.findByMessageId(messageId, expected);
    if (found !== undefined) return found;
    const local = this.replay.recentRevisionOf(messageId);
    if (local !== undefined) return local;
    const info = await this.log.info();
    if (info.firstRevision <= expected) return undefined;
    const first = await this.log.entryAt(info.firstRevision);
    const decoded = first && decodeEntry(first.data);
    if (decoded && decoded.ok && decoded.entry.kind === "snapshot") {
      const hit = decoded.entry.recent?.find((r) => r[0] === messageId);
      if (hit) return hit[1];
    }
    return undefined;
  }

  /** Applies this client's own entry as decoded from the wire, in log order. */
  private async applyOwn(entry: LogEntry, base: number): Promise<void> {
    if (this.revision >= entry.revision) return;
    await this.reading;
    if (this.revision === base) this.consume(entry);
    else if (this.revision < entry.revision) await this.catchUp(entry.revision);
    if (this.stall) throw this.stall;
  }

  /**
   * Resolves once the replay stands on the log's first entry (genesis) or a snapshot, opening
   * the log again if needed; throws `UNAVAILABLE` (or the stall) when it cannot. Nothing may be
   * appended before: on an empty log it would become the first entry, before the genesis, and
   * no replica could ever open the log (found by the cluster fault test: the genesis append
   * timed out on a fresh R3 stream, the replica opened `offline` at revision 0, and its next
   * update was stored as entry 1).
   */
  private async anchor(): Promise<void> {
    if (this.replay.anchored) return;
    this.anchoring ??= this.connect().finally(() => {
      this.anchoring = undefined;
    });
    await this.anchoring;
    if (this.stall) throw this.stall;
    if (!this.replay.anchored) {
      throw new StateSyncError(
        "UNAVAILABLE",
        "the log's first entry could not be written or read yet; nothing was appended",
      );
    }
  }

  updateUnconditionally<K extends keyof C & string>(
    command: K,
    args: CommandArgs<C[K]>,
    options?: UpdateOptions,
  ): Promise<{ readonly revision: number }> {
    return (async () => {
      this.assertUsable();
      if (typeof command !== "string") {
        throw new StateSyncError("VALIDATION", "command must be a command name");
      }
      this.parseCommand(command, args);
      const opts = this.parseUpdateOptions(options);
      if (opts.signal?.aborted) throw abortError(opts.signal);
      await this.anchor();
      const entry: Entry = {
        v: 1,
        kind: "command",
        ts: Date.now(),
        seed: nextSeed(),
        client: this.clientId,
        name: command,
        args: args as unknown,
      };
      const prepared = await this.prepare(entry, "the command");
      const messageId = this.nextMessageId();
      this.expectOwn(messageId, prepared);
      try {
        const revision = await this.appendExactlyOnce(
          prepared.data,
          undefined,
          opts.outcomeTimeoutMs,
          messageId,
          opts.signal,
        );
        if (this.revision >= revision) this.own.delete(messageId);
        return { revision };
      } catch (e) {
        this.own.delete(messageId);
        throw e;
      }
    })();
  }

  // ------------------------------------------------------------------ compaction

  compact(): Promise<CompactionResult> {
    if (this.compacting) return this.compacting;
    const run = this.runCompaction().finally(() => {
      this.compacting = undefined;
    });
    this.compacting = run;
    return run;
  }

  /**
   * Writes the state as a snapshot entry with a conditional append, then truncates the history
   * before it. A crash in between leaves the snapshot entry and the whole history: nothing lost,
   * the next compaction truncates. Concurrent compactions: only one snapshot entry can be based on
   * a revision; truncation below an already truncated point removes nothing (Pravega issues 4383
   * and 6232).
   */
  private async runCompaction(): Promise<CompactionResult> {
    this.assertUsable();
    let revision = 0;
    for (let attempt = 0; revision === 0; attempt++) {
      // Local updates wait meanwhile: this replica's own updates never conflict with it.
      await this.pauseWrites(true);
      try {
        revision = await this.appendSnapshotEntry();
      } catch (e) {
        // Busy logs: a snapshot entry races every writer, so it tries often and quickly.
        if (!isStateSyncError(e, "CONFLICT")) throw e;
        if (attempt >= 100) {
          throw new StateSyncError(
            "RETRY_LIMIT",
            "the snapshot entry lost 100 races to other writers",
            {
              cause: e,
              details: { attempts: attempt + 1 },
            },
          );
        }
        this.stats.conflicts += 1;
      } finally {
        await this.pauseWrites(false);
      }
      if (revision === 0) await sleep(Math.random() * 2);
    }
    await this.log.truncateBefore(revision);
    this.stats.compactions += 1;
    return { revision };
  }

  /** Appends the state as a snapshot entry at the tail; its revision (CONFLICT if it moved). */
  private async appendSnapshotEntry(): Promise<number> {
    await this.fetchUpdates();
    if (this.replay.lastKind === "snapshot") return this.revision; // the tail is one already
    const base = this.revision;
    // A snapshot entry replicas would refuse (Replay.jump) must not replace the history: a
    // patch from another writer can leave a state that fails the schema (found by the fault
    // tests: late joiners then failed with CORRUPT_ENTRY and the history was gone).
    const invalid = !this.model.state.safeParse(this.replay.state).success
      ? "it fails the model's schema"
      : findNonJson(this.replay.state);
    if (invalid !== undefined) {
      throw new StateSyncError(
        "VALIDATION",
        `not compacting at revision ${base}: the state cannot be a snapshot entry (${invalid}); the history is kept`,
        { details: { revision: base } },
      );
    }
    const entry: Entry = {
      v: 1,
      kind: "snapshot",
      base,
      ts: Date.now(),
      client: this.clientId,
      model: this.model.name,
      version: this.model.version,
      initialHash: this.model.initialHash,
      state: this.replay.state,
      recent: this.replay.recentForSnapshot(Date.now()),
    };
    const prepared = await this.prepare(entry, "the snapshot entry");
    const messageId = this.nextMessageId();
    this.expectOwn(messageId, prepared);
    try {
      this.stats.attempts += 1;
      const data = prepared.data;
      const revision = await this.appendExactlyOnce(
        data,
        base,
        DEFAULT_OUTCOME_TIMEOUT_MS,
        messageId,
      );
      await this.applyOwn({ revision, data, messageId }, base);
      return revision;
    } catch (e) {
      this.own.delete(messageId);
      throw e;
    }
  }

  // ------------------------------------------------------------------ snapshots, events, close

  /**
   * Saves run one at a time, each recording the state as it is when it starts. At most two are
   * outstanding: a call while one runs and another waits joins the waiting one, so a replica
   * consuming faster than its store writes does not queue a stale save per `snapshotEvery`.
   */
  saveSnapshot(): Promise<void> {
    if (this.closed) {
      return Promise.reject(new StateSyncError("CLOSED", "the synchronizer is closed"));
    }
    return this.save();
  }

  private save(): Promise<void> {
    const store = this.store;
    if (!store || !this.snapshotDue()) return this.saving;
    this.consumedSinceSnapshot = 0;
    if (this.nextSave && this.savesOutstanding >= 2) return this.nextSave;
    this.savesOutstanding += 1;
    const run = async () => {
      if (this.nextSave === p) this.nextSave = undefined;
      try {
        await this.writeSnapshot(store);
      } finally {
        this.savesOutstanding -= 1;
      }
    };
    const p = this.saving.then(run, run);
    this.nextSave = p;
    this.saving = p.catch(() => undefined);
    return p;
  }

  /**
   * The save after `snapshotEvery` entries, at most one starting every `AUTO_SAVE_MIN_MS`: a
   * replica consuming thousands of entries a second saves a few times a second, not continuously.
   */
  private autoSave(): void {
    if (this.autoSaveTimer !== undefined) return;
    const wait = this.lastAutoSave + AUTO_SAVE_MIN_MS - Date.now();
    const save = () => {
      this.autoSaveTimer = undefined;
      this.lastAutoSave = Date.now();
      if (!this.closed) void this.save().catch(() => undefined);
    };
    if (wait <= 0) save();
    else this.autoSaveTimer = setTimeout(save, wait);
  }

  /** Writes the state as it is now (if there is one worth keeping). */
  private async writeSnapshot(store: SnapshotStore): Promise<void> {
    if (!this.snapshotDue()) return;
    const record: SnapshotRecord = {
      format: 1,
      revision: this.revision,
      state: this.replay.state,
      logIdentity: this.logIdentity!,
      messageId: this.replay.messageId,
      model: this.model.name,
      modelVersion: this.model.version,
      savedAt: Date.now(),
    };
    try {
      await store.save(this.snapshotKey, record);
      this.stats.snapshotsSaved += 1;
    } catch (e) {
      const error = isStateSyncError(e)
        ? e
        : new StateSyncError("SNAPSHOT_FAILED", `saving the local snapshot failed: ${String(e)}`, {
            cause: e,
          });
      this.report(error);
      throw error;
    }
  }

  private snapshotDue(): boolean {
    return this.logIdentity !== undefined && this.revision > 0 && this.replay.anchored;
  }

  private setStatus(status: SyncStatus): void {
    if (this.statusValue === status || this.statusValue === "closed") return;
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
    if (this.autoSaveTimer) clearTimeout(this.autoSaveTimer);
    const closedError = new StateSyncError("CLOSED", "the synchronizer is closed");
    for (const op of this.queue.splice(0)) op.reject(closedError);
    await this.writing?.catch(() => undefined);
    await this.compacting?.catch(() => undefined);
    const f = this.follower;
    this.follower = undefined;
    await f?.stop().catch(() => undefined);
    this.unwatchStatus?.();
    this.unwatchConnection?.();
    for (const w of this.waiters) w.reject(closedError);
    this.waiters.clear();
    await this.saving;
    await this.save().catch(() => undefined);
    this.setStatus("closed");
    if (this.options.ownsLog) await this.log.close().catch(() => undefined);
    await this.options.onClose?.();
  }
}

/**
 * The queued updates that may run again; the others, out of attempts, are rejected with
 * `RETRY_LIMIT` ("<what> <n> times").
 */
function withAttemptsLeft<S>(
  ops: PendingUpdate<S>[],
  what: string,
  cause?: unknown,
): PendingUpdate<S>[] {
  return ops.filter((op) => {
    if (op.attempts < op.maxAttempts) return true;
    op.reject(
      new StateSyncError("RETRY_LIMIT", `${what} ${op.attempts} times`, {
        cause,
        details: { attempts: op.attempts },
      }),
    );
    return false;
  });
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a === b) return true;
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * `UNKNOWN_OUTCOME` for a re-send that failed with `cause` after an earlier attempt's outcome was
 * unknown (found by the fault tests' checker: a re-send denied after a lost acknowledgement was
 * reported `PERMISSION_DENIED`, "nothing appended", though the first attempt was in the log).
 */
function outcomeUnknown(cause: unknown, messageId: string): StateSyncError {
  if (isStateSyncError(cause, "UNKNOWN_OUTCOME")) return cause;
  const why = cause instanceof Error ? cause.message : String(cause);
  return new StateSyncError(
    "UNKNOWN_OUTCOME",
    `the append may or may not be stored: an earlier attempt's outcome is unknown and the re-send failed (${why})`,
    { cause, details: { messageId } },
  );
}

function isThenable(v: unknown): boolean {
  return (
    v !== null && typeof v === "object" && typeof (v as { then?: unknown }).then === "function"
  );
}

function asError(e: unknown, code: StateSyncError["code"], message: string): StateSyncError {
  if (e instanceof StateSyncError) return e;
  return new StateSyncError(code, `${message}: ${String(e)}`, { cause: e });
}
