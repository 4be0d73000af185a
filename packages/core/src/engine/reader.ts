import { sleep } from "../backoff.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import type { LogEntry, LogFollower, RevisionedLog } from "../log.js";
import type { CommandMap } from "../model.js";
import { nextTask } from "../next-task.js";
import type { Replica } from "./replica.js";
import type { StatusHub } from "./status.js";

/**
 * A catch-up hands the replica its entries together (one Immer draft when they allow it), as many
 * as the replica's last draft suggested (`Replica.preferredRun`, 32 to 256), or fewer when they
 * hold this many bytes (a chunked snapshot's parts are 1 MB each).
 */
const READ_APPLY_BYTES = 4 * 1024 * 1024;
/** How long a catch-up lets a live follower deliver what it is about to, before reading (ms). */
const FOLLOWER_GRACE_MS = 250;
/** Reads in a row that bring nothing (each overtaken by a compaction) before a catch-up gives up. */
const MAX_SHORT_READS = 4;
/** Wait before restarting a failed follower, ms: from this, doubling while it keeps failing. */
const RESTART_MIN_MS = 250;
/** Longest wait between restarts of a failing follower, ms. */
const RESTART_MAX_MS = 30_000;

/**
 * Brings entries from the log to the replica: range reads (catching up) and the live follower.
 *
 * Invariants:
 * 1. Range reads run one at a time, each from the replica's revision when it starts.
 * 2. A read that comes back short of its target stalls the replica with `TRUNCATED` (the log no
 *    longer holds what it needs and no snapshot entry followed); it never skips a gap.
 * 3. At most one follower runs; it starts at the replica's revision + 1 and stops when the
 *    replica stalls or closes. A follower that fails is reported and started again.
 * 4. `close()` ends every wait for a catch-up at once (`CLOSED`): `fetchUpdates()`, `synced()`,
 *    a writer's catch-up after a conflict (which `close()` waits for) do not wait for a read that
 *    a server which stopped answering would end only at the request timeout. The read itself
 *    goes on; what it delivers after `close()` is dropped by the replica.
 * 5. While held (`hold`, from a lost connection until the check after reconnecting), nothing
 *    reaches the replica: the follower's entries wait in order and reads wait to start;
 *    `release` applies them, a stall drops them. Conditional appends wait too (`untilReleased`).
 * 6. The follower's entries reach the replica in batches, those that arrived before the event
 *    loop's next task together, in order (one Immer draft, one migration check and one
 *    notification for a run instead of one per entry: a replica whose entries cost in
 *    proportion to its state fell behind busy writers for good, and a newer model version's
 *    replica could not write its switch until they paused: a fresh-eyes trial). A stopped
 *    follower's batch is dropped: the next follower or read starts at the replica's revision.
 */
export class Reader<S, C extends CommandMap<S>> {
  private reading: Promise<void> = Promise.resolve();
  /** The highest revision this replica's writer knows is stored (`noteStored`). */
  private stored = 0;
  private follower: LogFollower | undefined;
  /** The message of the problem the follower last failed with, reported once (see below). */
  private failing: string | undefined;
  /** Wait before the next restart of a failing follower, ms: 250 doubling to 30 s. */
  private restartDelayMs = RESTART_MIN_MS;
  /** The follower's entries while held (invariant 5); undefined when not held. */
  private held: LogEntry[] | undefined;
  /** Ends the reads' wait for `release` (invariant 5). */
  private released: () => void = () => undefined;
  private whenReleased: Promise<void> = Promise.resolve();
  /** Counts holds, so that a check started before a newer hold does not release it. */
  private holds = 0;

  constructor(
    private readonly log: RevisionedLog,
    private readonly replica: Replica<S, C>,
    private readonly status: StatusHub,
  ) {
    status.onStall(() => {
      this.held = undefined;
      this.released();
      void this.stopFollowing();
    });
    status.signal.addEventListener("abort", () => this.released(), { once: true });
  }

  /**
   * Holds entries back from the replica (invariant 5) until `release(holdToken)`. For a reconnection: a log that went back (a server that lost acknowledged appends)
   * must be found before any of its entries is applied, and a follower that resumes at once
   * delivers them before the check could answer (found when nats.js stopped waiting 30 s to
   * create a consumer again: the replica applied the rewound log's entries and was not stalled).
   */
  hold(): void {
    if (this.held === undefined && !this.status.stopped) {
      this.held = [];
      this.whenReleased = new Promise((resolve) => (this.released = resolve));
    }
    this.holds += 1;
  }

  /** The token of the latest hold (0: none yet); `release` of an older one does nothing. */
  get holdToken(): number {
    return this.holds;
  }

  /**
   * While held, resolves at the release (or the stall, or `close()`); else undefined. A
   * conditional append waits for it: the revision it is conditional on is unchecked until then.
   */
  untilReleased(): Promise<void> | undefined {
    return this.held ? this.whenReleased : undefined;
  }

  /** Applies the entries held back by the hold `token` and lets reads go on (invariant 5). */
  release(token: number): void {
    if (token !== this.holds || this.held === undefined) return;
    const entries = this.held;
    this.held = undefined;
    this.released();
    if (entries.length > 0 && !this.status.stopped) this.replica.consume(entries);
  }

  /** True while a follower runs. */
  get following(): boolean {
    return this.follower !== undefined;
  }

  /** Resolves when the reads started so far are done. */
  settled(): Promise<void> {
    return this.reading;
  }

  /**
   * Reads entries up to `target` into the replica (serialized with other reads). A read that
   * comes back short was overtaken by a compaction (issue 10, case 1): the entries after the
   * replica's revision were truncated, and the snapshot entry that replaced them may lie past
   * `target` (which was read before the compaction). So it reads on to the log's latest revision,
   * where the replay jumps onto that snapshot entry; only when the log holds nothing newer, or
   * after {@link MAX_SHORT_READS} tries, does it stall with `TRUNCATED` (invariant 2).
   */
  readRange(target: number): Promise<void> {
    const run = async () => {
      // A read queued behind others may find its target reached: it reads nothing. (Before, it
      // still read up to `stored`, one new entry each: with many unconditional commands in
      // flight on a replica that does not follow, every caller paid a range read of its own and
      // a non-live writer fell from about 4,900 to 300-490 appends/s.)
      if (this.held) await this.whenReleased; // invariant 5
      if (this.replica.revision >= target) return;
      // As far as this writer knows the log goes: the reads queued behind this one, each waiting
      // for its own entry to be consumed, then have nothing left to read.
      const goal = Math.max(target, this.stored);
      this.replica.readingRange(true);
      try {
        await this.readUntil(goal);
      } finally {
        this.replica.readingRange(false);
      }
    };
    const p = this.reading.then(run, run);
    this.reading = p.catch((e: unknown) => this.status.fatal(e));
    return p;
  }

  /**
   * `readRange`'s reads: to `goal`, then on to the log's end after a short read. A read that
   * moved the replica on (`readPosition`) is no short read: a compaction that overtakes a read
   * to the log's end leaves it the first entry it retained (`RevisionedLog.read`), and for a
   * chunked snapshot that is part 0 only, whose other parts the next read brings (a new user's
   * trial: beside replicas compacting a 4 MB state in a loop, reads that each brought a part 0
   * counted as failures). The loop ends: without progress after {@link MAX_SHORT_READS} reads,
   * with progress once the log stops growing (its revision or its end is reached).
   */
  private async readUntil(goal: number): Promise<void> {
    for (let shortReads = 0, reads = 0; ; reads++) {
      if (this.replica.revision >= goal || this.status.stopped) return;
      // After a short read, to the log's end as the read itself finds it: a goal read from
      // `info()` before may lie before the log's first entry by the time the read starts (a
      // compaction in between), and such a read finds nothing (a trial, stop 33: a replica
      // behind a slow proxy, on a log compacted every 40 entries, stalled after 4 of them).
      const position = this.replica.readPosition;
      await this.readOnce(reads === 0 ? goal : Number.POSITIVE_INFINITY);
      if (this.status.stopped || this.replica.revision >= goal) return;
      shortReads = this.replica.readPosition > position ? 0 : shortReads + 1;
      const latest = (await this.log.info()).latestRevision;
      if (latest <= goal || shortReads >= MAX_SHORT_READS) {
        const after = this.replica.revision;
        // The replica holds all the log holds, and the goal lies past the log's end: it came
        // from a conflict whose "latest" the stream never reached, not from a truncation.
        if (latest < goal && after >= latest) throw phantomLatest(goal, latest);
        // A log that never had a starting point: the opener starts it again (`reanchor`).
        if (this.replica.neverStarted) return;
        // No starting point after the entries it read past (`Replay.readPast`).
        const unusable = this.replica.unusableStart;
        if (unusable) return this.status.stall(unusable);
        // In a state's own stream every sequence is an entry of it: one it cannot read was
        // deleted, or is a message on another subject (a fresh-eyes trial, stop 25, saw only
        // "no longer holds" for a message published there while a subject was added).
        const why = this.log.contiguous
          ? ": deleted, or a message on another subject of the state's own stream"
          : "";
        return this.status.stall(
          new StateSyncError(
            "TRUNCATED",
            `the log no longer holds the entries after revision ${after} (latest: ${latest})${why}`,
            { details: { after, latest } },
          ),
        );
      }
      goal = latest;
    }
  }

  /**
   * Notes that the log holds an entry at `revision` (this writer's, acknowledged): a read started
   * later may read up to it at once instead of one entry per caller (many unconditional commands
   * in flight on a replica that does not follow, each waiting for its entry to be consumed).
   */
  noteStored(revision: number): void {
    if (revision > this.stored) this.stored = revision;
  }

  /**
   * One range read into the replica, in batches. When the read fails midway, the entries it
   * delivered are still applied before the error goes on (they are in order and each was
   * checked like any other): the next read starts after them. Before, they were dropped, and a
   * catch-up that a server cut at the same point each time (a low `max_pending`) started over
   * from the same revision forever (issue 13).
   */
  private async readOnce(target: number): Promise<void> {
    const batch: LogEntry[] = [];
    let bytes = 0;
    try {
      for await (const entry of this.log.read(this.replica.readPosition + 1, target)) {
        batch.push(entry);
        bytes += entry.data.byteLength;
        if (batch.length < this.replica.preferredRun && bytes < READ_APPLY_BYTES) continue;
        bytes = 0;
        await this.consume(batch.splice(0));
        if (this.status.stopped) return;
      }
    } finally {
      if (batch.length > 0) await this.consume(batch);
    }
  }

  /** Hands a read's entries to the replica, after the hold when there is one (invariant 5). */
  private async consume(entries: LogEntry[]): Promise<void> {
    if (this.held) await this.whenReleased;
    if (!this.status.stopped) this.replica.consume(entries);
  }

  /**
   * Catches up with `target` (default: the log's latest revision): lets a live follower deliver
   * for a moment first (it usually has the entries already), then reads what is still missing.
   * Throws what the log throws, or `CLOSED` as soon as the replica closes (invariant 4).
   */
  catchUp(target?: number): Promise<void> {
    return this.status.untilClosed(this.catchUpNow(target));
  }

  private async catchUpNow(target: number | undefined): Promise<void> {
    const latest = target ?? (await this.log.info()).latestRevision;
    if (this.replica.revision >= latest) return;
    if (this.follower && this.log.status === "online") {
      if (await this.replica.waitUntil(latest, FOLLOWER_GRACE_MS)) return;
    }
    await this.readRange(latest);
  }

  /**
   * Starts the live follower at revision + 1 (no-op when one runs or the replica stopped). Its
   * entries reach the replica in batches (invariant 6).
   */
  startFollowing(): void {
    if (this.follower || this.status.stopped) return;
    const onError = (error: unknown) => {
      this.status.fatal(error);
      if (this.status.stopped) return;
      this.reportOnce(error);
      void this.restartFollowing();
    };
    let batch: LogEntry[] = [];
    const flush = () => {
      const entries = batch;
      batch = [];
      if (this.follower !== follower || this.status.stopped) return; // stopped: dropped
      try {
        if (this.held) this.held.push(...entries);
        else this.replica.consume(entries);
      } catch (e) {
        onError(e); // as a follower whose handler threw: it ends the follow
      }
    };
    const follower = this.log.follow(this.replica.readPosition + 1, {
      onEntry: (entry) => {
        this.restartDelayMs = RESTART_MIN_MS;
        if (batch.push(entry) === 1) nextTask(flush);
      },
      // What catch-ups read already need not be read again by the follower.
      revision: () => this.replica.revision,
      onError,
    });
    this.follower = follower;
  }

  /**
   * Restarts a follower that failed, once the log answers and accepts this replica again. A
   * problem that lasts (a stream edited to drop history, seen after a reconnect) is reported once
   * and the status says `offline` until it is gone, instead of an event every 250 ms under a
   * `live` status that no longer followed (found by a fresh-eyes trial).
   */
  private async restartFollowing(): Promise<void> {
    await this.stopFollowing();
    for (;;) {
      if (this.status.stopped) return;
      await sleep(this.restartDelayMs);
      this.restartDelayMs = Math.min(RESTART_MAX_MS, this.restartDelayMs * 2);
      if (this.status.stopped || this.follower) return;
      try {
        await this.log.info(); // throws what a new follower would meet (STREAM_CONFIG, ...)
        break;
      } catch (e) {
        if (this.status.stopped) return;
        this.reportOnce(e);
        if (isStateSyncError(e, "STREAM_CONFIG")) this.status.set("offline");
      }
    }
    this.failing = undefined;
    const checked = !this.held; // else the reconnection's check says when (invariant 5)
    if (this.status.status === "offline" && this.log.status === "online" && checked) {
      this.status.set("live");
    }
    this.startFollowing();
  }

  private reportOnce(error: unknown): void {
    const e =
      error instanceof StateSyncError
        ? error
        : new StateSyncError("UNAVAILABLE", `following the log failed: ${String(error)}`, {
            cause: error,
          });
    if (e.message === this.failing) return;
    this.failing = e.message;
    this.status.report(e);
  }

  /** Stops the follower; resolves when no more entries will come from it. */
  async stopFollowing(): Promise<void> {
    const f = this.follower;
    this.follower = undefined;
    await f?.stop().catch(() => undefined);
  }
}

/**
 * A conflict named a latest revision past the log's last one: a server bug after a publish its
 * resource limits refused (nats-io/nats-server#7658, December 2025). nats-server 2.10 counts the
 * refused publish in the sequence its expected-last-sequence check compares with, storing
 * nothing, until it restarts; 2.9 finds no last message on the subject (`last_by_subj`) until a
 * publish succeeds again. Before, the writer stalled `TRUNCATED` for good (found by a trial). The
 * update fails; the replica stays as it is.
 */
function phantomLatest(goal: number, latest: number): StateSyncError {
  return new StateSyncError(
    "UNSUPPORTED_SERVER",
    `the server checks conditional appends against revision ${goal}, but reports that the log ends at ${latest}: a nats-server bug after a publish its resource limits refused (nats-io/nats-server#7658; 2.10 until it restarts, 2.9 until a publish succeeds), so conditional updates fail meanwhile`,
    { details: { claimed: goal, latest } },
  );
}
