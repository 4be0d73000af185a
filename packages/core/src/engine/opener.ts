import { abortError, sleep, untilAborted } from "../backoff.js";
import { connectionClosedError, isStateSyncError, StateSyncError } from "../errors.js";
import type { LogConnectionStatus, RevisionedLog } from "../log.js";
import type { CommandMap, Model } from "../model.js";
import type { Appender } from "./appender.js";
import type { ConfigWatch } from "./config-watch.js";
import { FirstEntry, notOnLogYet, notStartedYet } from "./first-entry.js";
import { logBehindError, writeBackAfterPurge } from "./log-changes.js";
import { checkAfterReconnect } from "./reconnect-check.js";
import type { Reader } from "./reader.js";
import type { Replica } from "./replica.js";
import type { Snapshots } from "./snapshots.js";
import type { StatusHub } from "./status.js";
import { within } from "./wait-limits.js";
import { whenAborted } from "../abort-watch.js";

/**
 * Opening the log and staying on it: checks the restored snapshot against the log, writes the
 * genesis entry of an empty log, catches up and starts following; while the log is unreachable
 * it keeps trying in the background (status `offline`), and after a reconnect it catches up.
 *
 * Invariants:
 * 1. Nothing is appended, and no catch-up starts, before the replica stands on the log
 *    (`standsOnLog`, `anchor`): on its first entry (genesis), a snapshot entry, or a restored
 *    snapshot that was checked against the log. On an empty log an update would become the first
 *    entry, before the genesis, and no replica could ever open the log (found by the cluster fault
 *    test); on an unchecked snapshot it would be computed on a state the log may not have (CI).
 * 2. An unreachable log is not fatal (`offline`, retried with a backoff that grows with each
 *    failure in a row, 100 ms doubling to 3 s, jittered, and cut short when the log says it is
 *    back: 10,000 replicas opening against a server that is restarting must not ask it 10 to 20
 *    times a second each, as they did); anything else that stops
 *    the opening (another model, a truncated log, a denial) stalls the replica. An unreachable
 *    log that says why and that it lasts until the setup changes (`details.persistent`: JetStream
 *    not reachable in the account or domain) is reported as an `"error"` event once per distinct
 *    message, and makes the replica not writable with that error, until it opens (before, a
 *    leaf-node client without `domain` stayed `offline` in silence: issue 13).
 * 3. The genesis entry passes the same checks as every other entry before it is sent.
 * 4. One opening at a time: `start`, the reconnect timer, the log's "online" and `anchor` share
 *    the one in flight (before, a timer or an "online" could start a second opening, with its
 *    own catch-up, while the first was still reading). While an opening is scheduled, `anchor`
 *    (an update, `synced()`, `fetchUpdates()`) waits for it instead of starting one: each
 *    caller's retries started openings of their own, 118 in 15 s with ten `synced()` callers.
 * 5. `close()` ends every wait on an opening at once, with `CLOSED` (`anchor`: updates,
 *    `synced()`, `fetchUpdates()`, and so `close()` itself, which waits for the batch being
 *    written). The opening's own call to the log goes on until the log answers or fails (a
 *    closed `JetStreamLog` ends its waits for a connection), but nothing it learns then is used,
 *    reported or appended. Before, all of them waited for the log's request timeout against a
 *    server that had stopped answering.
 * 6. A log whose connection ended for good (status `closed`, or a call that throws
 *    `CONNECTION_CLOSED`) stalls the replica with that error: no reconnect is tried, and every
 *    wait on an opening ends at once (before, the replica stayed `offline` and `synced()` waited
 *    until `close()`; found by a fresh-eyes trial).
 * 7. After a reconnection the log must still hold the entry this replica applied last (else
 *    `LOG_REPLACED`); until the log answered, the reader holds what it delivers, conditional
 *    appends wait and the replica stays `offline` (`reconnect-check.ts`).
 * 8. A local snapshot kept over a purged log is written back into it (`log-changes.ts`).
 * 9. No opening starts before the restore ended (one the log's "online" started checked nothing).
 */
export class Opener<S, C extends CommandMap<S>> {
  /** True once the replica has caught up with the log since it was opened. */
  connected = false;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  /** Failed openings in a row (the backoff's step, invariant 2). */
  private failures = 0;
  /** The restore of the local snapshot, which every opening waits for (invariant 9). */
  private restoring: Promise<void> = Promise.resolve();
  /** The opening in flight: there is at most one (invariant 4). */
  private opening: Promise<void> | undefined;
  /** Callers of `anchor` waiting for the next scheduled opening (invariant 4). */
  private readonly waiting = new Set<() => void>();
  private connectionFailed = false;
  private onConnectionFailure: (() => void) | undefined;
  private unwatch: (() => void) | undefined;
  /** The lasting opening problem reported last (invariant 2). */
  private lastingProblem: StateSyncError | undefined;
  private readonly firstEntry: FirstEntry<S, C>;
  /** Set by the wiring: a compaction, for invariant 8. */
  compactPurged: (() => Promise<unknown>) | undefined;

  constructor(
    private readonly log: RevisionedLog,
    private readonly model: Model<S, C>,
    private readonly clientId: string,
    private readonly live: boolean,
    private readonly replica: Replica<S, C>,
    private readonly reader: Reader<S, C>,
    private readonly snapshots: Snapshots<S, C>,
    private readonly appender: Appender,
    private readonly status: StatusHub,
    private readonly config: ConfigWatch,
  ) {
    this.firstEntry = new FirstEntry(log, model, clientId, reader, appender, status);
    // Invariant 6: a stopped replica opens and checks nothing more; who waits for an opening
    // learns it at once.
    status.onStall(() => {
      this.config.stop();
      if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
      this.wakeWaiting();
    });
  }

  /**
   * Restores the local snapshot and opens the log. With `"restored"` resolves right after the
   * restore; with `"synced"` once caught up, or at once `offline` when a background connection
   * already reported a failure (the server refused it, the name does not resolve).
   */
  async start(waitFor: "synced" | "restored"): Promise<void> {
    this.restoring = this.snapshots.restore(this.log.identityPrefix);
    // Before the first request: a notice subscription goes out ahead of the log's reads.
    this.config.start();
    const unwatch = [
      this.log.watchStatus((s, e) => this.onLogStatus(s, e)),
      this.log.watchWarnings?.((w) => this.status.report(w)),
    ];
    this.unwatch = () => unwatch.forEach((stop) => stop?.());
    await this.restoring;
    const connecting = this.connect();
    if (waitFor === "restored") {
      connecting.catch(() => undefined);
      return;
    }
    const failed = new Promise<"offline">((resolve) => {
      this.onConnectionFailure = () => resolve("offline");
      if (this.connectionFailed) resolve("offline");
    });
    try {
      const first = await Promise.race([connecting.then(() => "done" as const), failed]);
      if (first === "offline") {
        connecting.catch(() => undefined);
        if (this.status.status === "connecting") this.status.set("offline");
      }
    } finally {
      this.onConnectionFailure = undefined;
    }
  }

  /**
   * A background connection reported a failed attempt (`connectionErrors`: refused, or a name
   * that does not resolve): `offline` now, whatever `waitFor` said (before, a browser replica
   * opened with `"restored"` said `connecting` until its first request timed out; issue 12).
   */
  connectionFailedOnce(): void {
    this.connectionFailed = true;
    if (this.status.status === "connecting") this.status.set("offline");
    this.onConnectionFailure?.();
  }

  /** Opens the log, or joins the opening in flight (invariant 4). */
  private connect(): Promise<void> {
    this.opening ??= this.open().finally(() => (this.opening = undefined));
    return this.opening;
  }

  /** Checks the snapshot against the log, writes genesis, catches up, follows (invariant 2). */
  private async open(): Promise<void> {
    try {
      await this.restoring;
      const info = await this.log.info();
      if (this.status.closed) return; // invariant 5: nothing learned after close() is used
      this.appender.learn(info);
      await this.snapshots.checkAgainstLog(this.log, info);
      if (this.status.closed) return;
      this.snapshots.logIdentity = info.identity;
      let latest = info.latestRevision;
      if (latest === 0 && this.replica.revision === 0)
        latest = await this.firstEntry.appendGenesis();
      // An emptied log (an operator purged the whole stream: nothing retained, the sequence kept)
      // has nothing to read: a replica without a state starts it again (`reanchor`, below);
      // reading would stop TRUNCATED at the first missing entry (fresh-eyes trial).
      const emptied = info.firstRevision === 0 && info.latestRevision > 0 && !this.replica.anchored;
      if (!emptied) await this.reader.readRange(latest);
      // Closed while reading: the read ended early, which is no sign of an unusable log.
      if (this.status.closed) return;
      if (this.status.stallReason) throw this.status.stallReason;
      if (!this.replica.anchored && latest > 0) await this.firstEntry.reanchor(latest, emptied);
      if (!this.replica.anchored) throw notStartedYet(latest); // others' entries came first
      this.connected = true;
      this.failures = 0;
      this.lastingProblem = undefined;
      if (this.live) this.reader.startFollowing();
      this.status.set(this.log.status === "online" ? "live" : "offline");
      this.status.reconnected();
      this.config.check();
      if (this.snapshots.keptOverPurge) {
        this.snapshots.keptOverPurge = false;
        writeBackAfterPurge(this.compactPurged, this.status);
      }
    } catch (e) {
      if (this.status.closed) return;
      if (isStateSyncError(e, "UNAVAILABLE")) {
        this.status.set("offline", e);
        if (e.details.persistent === true) this.lasting(e);
        this.failures += 1;
        this.scheduleReconnect();
        return;
      }
      const error =
        e instanceof StateSyncError
          ? e
          : new StateSyncError("UNAVAILABLE", `could not open the log: ${String(e)}`, { cause: e });
      this.status.stall(error);
      throw error;
    }
  }

  /** Reports an opening problem that lasts until the setup changes, once (invariant 2). */
  private lasting(error: StateSyncError): void {
    if (this.lastingProblem?.message === error.message) return;
    this.lastingProblem = error;
    this.status.report(error);
    this.status.cannotWrite(error);
  }

  /**
   * Opens again after the backoff of invariant 2 (before, each failed opening scheduled its
   * retry at the first step: a replica retried every 50-100 ms for as long as it was down).
   * `now`: the log says it is back, so within 0-100 ms (jittered: the clients' reconnections
   * are), and the backoff starts again from its first step.
   */
  private scheduleReconnect(now = false): void {
    if (this.status.closed) return;
    if (now) {
      if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
      this.reconnectTimer = undefined;
      this.failures = 0;
    } else if (this.reconnectTimer) return;
    const step = Math.min(Math.max(this.failures - 1, 0), 5);
    const delay = now
      ? Math.random() * 100
      : Math.min(3_000, 100 * 2 ** step) * (0.5 + Math.random() / 2);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.status.closed || this.connected) return this.wakeWaiting();
      this.connect()
        .then(
          () => {
            if (!this.connected && !this.status.stopped) this.scheduleReconnect();
          },
          () => undefined,
        )
        .finally(() => this.wakeWaiting());
    }, delay);
  }

  /** Resolves once the scheduled opening was tried, `ms` passed, `signal` aborted or closed. */
  private nextOpening(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        stop?.();
        this.waiting.delete(done);
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : undefined;
      const stop = signal && whenAborted(signal, done);
      this.waiting.add(done);
    });
  }

  private wakeWaiting(): void {
    for (const done of [...this.waiting]) done();
  }

  private onLogStatus(status: LogConnectionStatus, error?: StateSyncError): void {
    if (this.status.stopped) return;
    if (status === "closed")
      return this.status.stall(error ?? connectionClosedError("the log said so"));
    if (status === "offline") {
      if (this.connected) this.reader.hold(); // until the reconnection's check (invariant 7)
      this.status.set("offline", error);
      return;
    }
    if (!this.connected) {
      this.scheduleReconnect(true);
      return;
    }
    // `online` again while online: a connection replaced (`RevisionedLog.watchStatus`), checked.
    if (this.status.status !== "offline") this.reader.hold();
    this.config.check(); // the configuration may have been edited while this replica was away
    void this.afterReconnect();
  }

  /**
   * Invariant 7: once the log said it still holds what this replica applied (else it stalls
   * `LOG_REPLACED`; asked until it answers, `reconnect-check.ts`), the held entries are applied,
   * the replica is `live` again and the catch-up closes any gap the follower cannot see.
   */
  private async afterReconnect(): Promise<void> {
    if (!(await checkAfterReconnect(this.log, this.replica, this.reader, this.status))) return;
    this.status.set("live");
    await this.fetchUpdates().then(
      () => this.status.reconnected(),
      () => undefined,
    );
  }

  /**
   * True once the replica stands on the log: on its first entry or a snapshot entry, or on a
   * restored snapshot that was checked against the log (invariant 1). Until then, nothing is
   * appended and no catch-up starts from the replica's revision.
   */
  get standsOnLog(): boolean {
    return this.replica.anchored && !this.snapshots.unchecked;
  }

  /**
   * Resolves once the replica stands on the log ({@link standsOnLog}, invariant 1), through the
   * opening in flight, else the next one scheduled (invariant 4), else a new one; with `until`
   * (ms since the epoch) through every opening until then (an update waits up to its
   * `outcomeTimeoutMs` for a log not reachable yet, as it does once open). Throws `UNAVAILABLE`
   * when it still does not (at once after one opening when the problem lasts until the setup
   * changes), the stall, or `ABORTED`.
   */
  async anchor(until?: number, signal?: AbortSignal): Promise<void> {
    // An opening in flight may take the log's request timeout: `until` and `signal` end the
    // wait for it too (the opening goes on).
    const limits = { deadline: until ?? Infinity, signal: signal ?? this.status.signal };
    const started = Date.now();
    for (let first = true; !this.standsOnLog; first = false) {
      const over = until === undefined || Date.now() >= until || signal?.aborted === true;
      if (!first && (over || this.lastingProblem || this.status.closed)) break;
      if (this.opening) await this.status.untilClosed(within(this.opening, limits));
      else if (this.reconnectTimer && !this.lastingProblem) {
        await this.nextOpening(until === undefined ? Infinity : until - Date.now(), signal);
      } else await this.status.untilClosed(within(this.connect(), limits));
      this.status.assertUsable();
      if (signal?.aborted) throw abortError(signal);
    }
    if (!this.standsOnLog) {
      // A lasting problem (no JetStream in the account or domain) says why and what to change.
      const error = notOnLogYet(started, this.replica, this.lastingProblem, this.status);
      this.status.cannotWrite(error); // until a (re)connection stands on the log
      throw error;
    }
  }

  /**
   * A conflict said the log's latest revision is `latest`, before this replica's (see
   * `logBehindError`): restarts a purged key of a shared stream from a new genesis entry, or
   * stalls the replica. Throws the stall error, or as the log does.
   */
  async logBehind(latest: number): Promise<void> {
    if (this.log.contiguous || latest !== 0) {
      const error = logBehindError(this.replica.revision, latest);
      this.status.stall(error);
      throw error;
    }
    await this.firstEntry.appendGenesis();
    await this.reader.catchUp();
  }

  /** See `StateSynchronizer.fetchUpdates`. */
  async fetchUpdates(): Promise<number> {
    this.status.assertUsable();
    // Not on the log's first entry yet (its genesis could not be written or read at opening):
    // do that first, or fail UNAVAILABLE, rather than call an empty log caught up (found by the
    // cluster test: synced() resolved, and the next update failed).
    if (!this.standsOnLog) await this.anchor();
    try {
      await this.reader.catchUp();
    } catch (e) {
      this.status.fatal(e);
      throw e;
    }
    this.status.assertUsable();
    if (!this.connected) {
      this.connected = true;
      this.lastingProblem = undefined;
      if (this.live) this.reader.startFollowing();
      this.status.set("live");
    }
    return this.replica.revision;
  }

  /** See `StateSynchronizer.synced`: retries `UNAVAILABLE` until `signal` aborts. */
  async synced(signal: AbortSignal | undefined): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      if (signal?.aborted) throw abortError(signal);
      try {
        // The signal ends the wait at once, also while a first connection is still pending
        // (the fetch itself then ends on its own, within the log's request timeout).
        return await untilAborted(this.fetchUpdates(), signal);
      } catch (e) {
        if (!isStateSyncError(e, "UNAVAILABLE")) throw e;
        await sleep(Math.min(2_000, 50 * 2 ** attempt), signal);
      }
    }
  }

  /** Stops reconnecting and watching the log's status. */
  close(): void {
    this.config.stop();
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    this.wakeWaiting();
    this.unwatch?.();
  }
}
