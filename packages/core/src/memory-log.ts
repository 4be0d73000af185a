import {
  AppendConflictError,
  connectionClosedError,
  StateSyncError,
  type StateSyncErrorCode,
} from "./errors.js";
import type {
  AppendOptions,
  AppendResult,
  LogConfigWatcher,
  LogConnectionStatus,
  LogEntry,
  LogFollowHandler,
  LogFollower,
  LogInfo,
  LogStatusListener,
  RevisionedLog,
} from "./log.js";
import { MemoryFollower, MemoryLogCore, newIdentity, replacedError } from "./memory-log-core.js";
import { raceLimits } from "./memory-log-limits.js";

/** Options of {@link MemoryLog}. */
export interface MemoryLogOptions {
  /** Largest entry in bytes. Default 1 MiB (NATS' default `max_payload`). */
  maxEntryBytes?: number;
  /**
   * Order of checks on a conditional append with a known message id. `"dedupe-first"` (default)
   * answers the original revision, as nats-server 2.9; `"expected-first"` answers CONFLICT, as
   * nats-server 2.12+ (see jetstream-notes "Lost acknowledgements").
   */
  duplicateCheck?: "dedupe-first" | "expected-first";
}

/**
 * An in-process {@link RevisionedLog} for unit tests and for users without a server. Several
 * synchronizers may share one `new MemoryLog()`; `handle()` gives another handle on the same
 * entries (as another connection would). Contiguous: revisions are 1, 2, 3, ...
 *
 * After LiveStore's mock sync backend it fails on purpose: {@link failNextAppends},
 * {@link loseNextAcks}, {@link setOffline}, {@link setAppendDelay}, {@link injectRaw},
 * {@link forgetMessageIds}, {@link recreate}, {@link setConfigProblem}, {@link denyConfigWatch},
 * {@link closeConnection}, {@link renewConnection}.
 */
export class MemoryLog implements RevisionedLog {
  readonly contiguous = true;
  private readonly core: MemoryLogCore;
  private closed = false;
  /** Set by {@link closeConnection}: this handle's connection ended for good. */
  private connectionClosed: StateSyncError | undefined;
  /** This handle's status listeners, with the wrappers registered in the shared core. */
  private readonly listeners = new Map<LogStatusListener, (s: LogConnectionStatus) => void>();

  constructor(options: MemoryLogOptions = {}, core?: MemoryLogCore) {
    this.core =
      core ??
      new MemoryLogCore(
        options.maxEntryBytes ?? 1024 * 1024,
        options.duplicateCheck ?? "dedupe-first",
      );
  }

  /** Another handle on the same entries, closed independently. */
  handle(): MemoryLog {
    return new MemoryLog({}, this.core);
  }

  get status(): LogConnectionStatus {
    if (this.connectionClosed) return "closed";
    return this.core.offline ? "offline" : "online";
  }

  /** The incarnation this handle first saw: after `recreate()` its calls throw `LOG_REPLACED`. */
  private identity: string | undefined;

  private check(): void {
    if (this.closed) throw new StateSyncError("CLOSED", "the log handle is closed");
    if (this.connectionClosed) throw this.connectionClosed;
    this.identity ??= this.core.identity;
    if (this.identity !== this.core.identity) throw replacedError();
    if (this.core.offline) {
      throw new StateSyncError("UNAVAILABLE", "the memory log is offline", {
        details: { notSent: true },
      });
    }
  }

  async info(): Promise<LogInfo> {
    this.check();
    if (this.core.configProblem !== undefined) {
      throw new StateSyncError("STREAM_CONFIG", this.core.configProblem);
    }
    return {
      identity: this.core.identity,
      firstRevision: this.core.entries[0]?.revision ?? 0,
      latestRevision: this.core.lastRevision,
      maxEntryBytes: this.core.maxEntryBytes,
    };
  }

  async appendConditional(
    data: Uint8Array,
    expectedRevision: number,
    messageId: string,
    options?: AppendOptions,
  ): Promise<AppendResult> {
    return this.append(data, messageId, expectedRevision, options);
  }

  async appendUnconditional(
    data: Uint8Array,
    messageId: string,
    options?: AppendOptions,
  ): Promise<AppendResult> {
    return this.append(data, messageId, undefined, options);
  }

  /**
   * With an append delay, the caller's `timeoutMs` and `signal` end its wait (`UNAVAILABLE`)
   * while the append itself goes on and is stored when the delay ends, as a slow server would.
   */
  private async append(
    data: Uint8Array,
    messageId: string,
    expected: number | undefined,
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    if (options.signal?.aborted) {
      throw new StateSyncError("UNAVAILABLE", "append aborted before it was sent", {
        details: { aborted: true, notSent: true },
      });
    }
    if (this.core.appendDelayMs > 0 && (options.timeoutMs !== undefined || options.signal)) {
      const stored = this.store_(data, messageId, expected);
      stored.catch(() => undefined);
      return raceLimits(stored, options);
    }
    return this.store_(data, messageId, expected);
  }

  private async store_(
    data: Uint8Array,
    messageId: string,
    expected: number | undefined,
  ): Promise<AppendResult> {
    this.check();
    if (this.core.configProblem !== undefined) {
      // As JetStreamLog: no append on a stream whose configuration the log refuses.
      throw new StateSyncError("STREAM_CONFIG", this.core.configProblem, {
        details: { notSent: true },
      });
    }
    if (data.byteLength > this.core.maxEntryBytes) {
      throw new StateSyncError(
        "PAYLOAD_TOO_LARGE",
        `entry of ${data.byteLength} bytes exceeds the log's maximum of ${this.core.maxEntryBytes}`,
        { details: { bytes: data.byteLength, maxEntryBytes: this.core.maxEntryBytes } },
      );
    }
    const copy = data.slice();
    if (this.core.appendDelayMs > 0) {
      await new Promise((r) => setTimeout(r, this.core.appendDelayMs));
      this.check();
    }
    const fault = this.core.faults.shift();
    if (fault?.kind === "fail") {
      throw new StateSyncError(fault.code, `injected failure (${fault.code})`);
    }
    const result = this.store(copy, messageId, expected);
    if (fault?.kind === "lose-ack") {
      throw new StateSyncError(fault.code, "injected lost acknowledgement");
    }
    return result;
  }

  private store(data: Uint8Array, messageId: string, expected: number | undefined): AppendResult {
    const core = this.core;
    const known = core.messageIds.get(messageId);
    const dedupe = (): AppendResult | undefined =>
      known === undefined ? undefined : { revision: known, duplicate: true };
    if (core.duplicateCheck === "dedupe-first") {
      const d = dedupe();
      if (d) return d;
    }
    if (expected !== undefined && expected !== core.lastRevision) {
      throw new AppendConflictError(expected, core.lastRevision);
    }
    const d = dedupe();
    if (d) return d;
    core.lastRevision += 1;
    const entry: LogEntry = { revision: core.lastRevision, data, messageId };
    core.entries.push(entry);
    core.messageIds.set(messageId, entry.revision);
    for (const f of core.followers) f.poke();
    return { revision: entry.revision, duplicate: false };
  }

  async *read(fromRevision: number, toRevision: number): AsyncIterable<LogEntry> {
    this.check();
    const snapshot = this.core.entries.filter(
      (e) => e.revision >= fromRevision && e.revision <= toRevision,
    );
    for (const e of snapshot) yield e;
  }

  follow(fromRevision: number, handler: LogFollowHandler): LogFollower {
    if (this.closed) throw new StateSyncError("CLOSED", "the log handle is closed");
    this.identity ??= this.core.identity;
    const gone = () => this.connectionClosed !== undefined;
    return new MemoryFollower(this.core, Math.max(1, fromRevision), handler, this.identity, gone);
  }

  async entryAt(revision: number): Promise<LogEntry | undefined> {
    this.check();
    return this.core.entries.find((e) => e.revision === revision);
  }

  async findByMessageId(
    messageId: string,
    afterRevision: number,
    scan = 1,
  ): Promise<number | undefined> {
    this.check();
    const after = this.core.entries.filter((e) => e.revision > afterRevision).slice(0, scan);
    return after.find((e) => e.messageId === messageId)?.revision;
  }

  async truncateBefore(revision: number): Promise<void> {
    this.check();
    this.core.truncations += 1;
    const fault = this.core.truncateFaults.shift();
    if (fault !== undefined)
      throw new StateSyncError(fault, `injected truncation failure (${fault})`);
    this.core.entries = this.core.entries.filter((e) => e.revision >= revision);
  }

  /** Notices from {@link setConfigProblem}; `onUnavailable` at once after {@link denyConfigWatch}. */
  watchConfig(watcher: LogConfigWatcher): () => void {
    if (this.core.configWatchDenied) {
      const denied = new StateSyncError("PERMISSION_DENIED", "injected: config notices denied");
      setTimeout(() => watcher.onUnavailable(denied), 0);
      return () => undefined;
    }
    this.core.configWatchers.add(watcher);
    return () => this.core.configWatchers.delete(watcher);
  }

  watchStatus(listener: LogStatusListener): () => void {
    if (this.connectionClosed) return () => undefined; // final: nothing follows `closed`
    const shared = (status: LogConnectionStatus) => listener(status);
    this.listeners.set(listener, shared);
    this.core.statusListeners.add(shared);
    return () => {
      this.listeners.delete(listener);
      this.core.statusListeners.delete(shared);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  // ---- faults, on purpose (LiveStore style) ----

  /** The next `n` appends fail without storing anything (default code UNAVAILABLE). */
  failNextAppends(n: number, code: StateSyncErrorCode = "UNAVAILABLE"): void {
    for (let i = 0; i < n; i++) this.core.faults.push({ kind: "fail", code });
  }

  /** The next `n` appends are stored but their acknowledgement is lost (UNAVAILABLE thrown). */
  loseNextAcks(n: number): void {
    for (let i = 0; i < n; i++) this.core.faults.push({ kind: "lose-ack", code: "UNAVAILABLE" });
  }

  /** The next `n` truncations fail (default code UNAVAILABLE), as a crash or a denial would. */
  failNextTruncations(n: number, code: StateSyncErrorCode = "UNAVAILABLE"): void {
    for (let i = 0; i < n; i++) this.core.truncateFaults.push(code);
  }

  /** Truncations attempted so far (for tests). */
  get truncations(): number {
    return this.core.truncations;
  }

  /** Every append waits `ms` before it is stored. */
  setAppendDelay(ms: number): void {
    this.core.appendDelayMs = ms;
  }

  /**
   * Ends this handle's connection for good, as nats.js does once its `maxReconnectAttempts` ran
   * out or `nc.close()` was called: its status turns `closed` (its listeners hear it, with the
   * error), every call of this handle then throws `CONNECTION_CLOSED` (`notSent`: nothing is
   * stored after it, also no append that waits for its delay), and its followers deliver no more.
   * Other handles go on. Idempotent.
   */
  closeConnection(why = "closed on purpose by MemoryLog.closeConnection()"): void {
    if (this.connectionClosed) return;
    const error = connectionClosedError(why, { notSent: true });
    this.connectionClosed = error;
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const [listener, shared] of listeners) {
      this.core.statusListeners.delete(shared);
      listener("closed", error);
    }
  }

  /** Takes the log off line (every call throws UNAVAILABLE, followers pause) or back. */
  setOffline(offline: boolean): void {
    if (this.core.offline === offline) return;
    this.core.offline = offline;
    const status: LogConnectionStatus = offline ? "offline" : "online";
    for (const l of this.core.statusListeners) l(status);
    if (!offline) for (const f of this.core.followers) f.poke();
  }

  /**
   * Says `online` again while online, as a log whose connection was replaced without an outage
   * (a tabs' handover of the lead: `RevisionedLog.watchStatus`). For tests of the check after it.
   */
  renewConnection(): void {
    if (this.core.offline) return;
    for (const l of this.core.statusListeners) l("online");
  }

  /**
   * The log loses every entry after `revision`, as a single server does whose store went back to
   * an older copy (a power loss before an fsync, a restored backup): same identity, the message
   * ids of the lost entries forgotten, followers resuming where they were, so later appends
   * reach them at revisions they had seen with other entries. For tests of a log that went back.
   */
  rewindTo(revision: number): void {
    const core = this.core;
    if (!Number.isSafeInteger(revision) || revision < 0 || revision > core.lastRevision) {
      throw new StateSyncError("VALIDATION", `revision must be 0..${core.lastRevision}`);
    }
    core.entries = core.entries.filter((e) => e.revision <= revision);
    core.lastRevision = revision;
    for (const [id, at] of core.messageIds) if (at > revision) core.messageIds.delete(id);
  }

  /** Appends raw bytes at the tail as another program would (no message id check). */
  injectRaw(data: Uint8Array | string, messageId?: string): number {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    return this.store(bytes, messageId ?? `raw-${Math.random()}`, undefined).revision;
  }

  /**
   * An operator edits the log's configuration: `info()` and appends then throw `STREAM_CONFIG`
   * with `problem` (undefined: the edit is undone), and watchers get a notice unless `notify` is
   * false (a notice the server never sent).
   */
  setConfigProblem(problem: string | undefined, { notify = true } = {}): void {
    this.core.configProblem = problem;
    if (notify) for (const w of [...this.core.configWatchers]) w.onChange();
  }

  /** Later `watchConfig` calls are refused (`onUnavailable`), as a denied subscription is. */
  denyConfigWatch(): void {
    this.core.configWatchDenied = true;
  }

  /** Forgets every message id, as the server does past its duplicate window. */
  forgetMessageIds(): void {
    this.core.messageIds.clear();
  }

  /**
   * Deletes every entry and starts a new incarnation with a new identity at revision 0. Handles
   * that were used before then throw `LOG_REPLACED` (as a JetStreamLog does when its stream is
   * deleted and created again); take a new `handle()` for the new log.
   */
  recreate(): void {
    this.identity = undefined; // this handle (the one that recreated it) goes on with the new log
    this.core.entries = [];
    this.core.lastRevision = 0;
    this.core.messageIds.clear();
    this.core.identity = newIdentity();
  }

  /** Number of entries retained (for tests). */
  get size(): number {
    return this.core.entries.length;
  }
}
