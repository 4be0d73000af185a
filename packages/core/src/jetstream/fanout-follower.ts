/**
 * The fan-out follower (docs/fanout.md): a live follower that costs the server one core NATS
 * subscription instead of one JetStream consumer.
 *
 * The stream republishes every stored entry of the state on a core subject (its RePublish rule,
 * see republish.ts) with `Nats-Sequence` (the entry's revision) and `Nats-Last-Sequence` (the
 * revision of the state's previous entry, in both layouts). The follower subscribes there and
 * hands an entry on at once when its `Nats-Last-Sequence` is the revision it delivered last.
 * Otherwise something was missed (republish is at most once; a slow consumer is cut off; nothing
 * arrives while disconnected): it holds what arrives, reads the gap from the log
 * (`readGap`: direct gets where allowed, a short-lived ordered consumer otherwise) and goes
 * back to the plain subscription.
 *
 * Invariants:
 * 1. Entries are delivered in revision order, each once, synchronously from the subscription's
 *    callback or from the gap fill; never after `stop()` was called. When the receiver says it
 *    has read further itself (`handler.revision()`), the follower goes on from there instead of
 *    reading those entries again.
 * 2. An entry is handed on only after the entry `Nats-Last-Sequence` names was delivered or read
 *    from the log (the read decides what a truncation removed, as a consumer read does). When
 *    the gap read ends elsewhere, a compaction truncated the gap (and perhaps the held entry
 *    too), or the headers name nothing (2.9.10 after a refused publish): the log's range read
 *    goes through the held entry, then on to the latest revision (the log then starts at a
 *    snapshot entry), and the held entry waits until a read reaches the entry before it.
 * 3. A tail check reads the state's latest revision: right after subscribing (entries stored
 *    before the subscription was in place), after every reconnection (entries stored while
 *    disconnected), and when the subscription was quiet for a jittered while (a lost last
 *    message, of which no later message tells; while it stays quiet, each check waits twice as
 *    long as the one before, up to 8 times `tailCheckMs`). Reconnection checks wait a random time up to
 *    `reconnectJitterMs`, and consumer reads are bounded per process, so a server restart with
 *    thousands of followers does not turn into thousands of requests at one instant.
 * 4. `PERMISSION_DENIED`, `TRUNCATED`, `LOG_REPLACED`, `STREAM_CONFIG` end the follow through
 *    `onError`; other failures are retried with jittered backoff. A tail check that finds the
 *    stream no longer republishing on the subscribed subject ends the follow with `UNAVAILABLE`
 *    (`details.republishGone`, `details.next`): `LiveFollower` goes on with a consumer.
 * 5. No entry of another incarnation of the stream (deleted and created again under the same
 *    name and rule) is handed on. Within one incarnation the republished messages of a subject
 *    form a chain: each names the one before it (`Nats-Last-Sequence`). A message that breaks
 *    the chain of those heard (a sequence that went back, a lower or a higher
 *    `Nats-Last-Sequence`), or that is the first heard and does not continue the revision, makes
 *    the follower check the stream's identity (`verify`: one stream info, `LOG_REPLACED` when
 *    its creation time changed) before it hands on anything else. The normal path only compares
 *    numbers. A new stream whose every message before the follower's revision was lost to it
 *    looks like the old one; the engine's check after a reconnection, or the next tail check,
 *    finds that one.
 */
import type { isStateSyncError, StateSyncError } from "../errors.js";
import type { LogEntry, LogFollowHandler, LogFollower } from "../log.js";
import type { ConnectionGate } from "./connection-gate.js";
import { readGap } from "./fanout-gap-read.js";
import type { FATAL } from "./follower.js";
import type { toStateSyncError } from "./nats-errors.js";
import type { CoreMsgLike } from "./nats-types.js";
import type { StreamSession } from "./stream-session.js";
import type { backoffMs, interruptibleSleep, MessageIdCodec } from "./util.js";

/**
 * What the fan-out follower and its gap reads use of the log's code, handed in by
 * `LiveFollower` (live-follower.ts): this file and fanout-gap-read.ts are loaded on demand, only
 * by a log opened with `fanout`, and import nothing at run time, so that a bundler puts them in
 * a chunk of their own and leaves the code loaded at open in one piece (README, "Bundle size").
 */
export interface FanoutDeps {
  readonly StateSyncError: typeof StateSyncError;
  readonly isStateSyncError: typeof isStateSyncError;
  readonly toStateSyncError: typeof toStateSyncError;
  readonly FATAL: typeof FATAL;
  readonly backoffMs: typeof backoffMs;
  readonly interruptibleSleep: typeof interruptibleSleep;
  readonly MSG_ID_HEADER: string;
}

/** What a {@link FanoutFollower} needs from the log. */
export interface FanoutSource {
  readonly gate: ConnectionGate;
  readonly stream: string;
  readonly subject: string;
  /** The state's own stream (every sequence is the state's), not the shared layout. */
  readonly contiguous: boolean;
  readonly ids: MessageIdCodec;
  /** The opened stream (throws like the log); its `liveSubject` must be set. */
  ready(): Promise<StreamSession>;
  /**
   * The latest revision of this state (throws like the log), with a fresh stream info read on the
   * way, so that the session's republish rule is current.
   */
  latest(): Promise<number>;
  /** Reads the stream info: throws `LOG_REPLACED` when the stream is another incarnation. */
  verify(): Promise<unknown>;
  /** The log's range read through an ordered consumer. */
  read(from: number, to: number): AsyncIterable<LogEntry>;
  /** Mean wait of the quiet-subscription tail check, ms (jittered ±50%). */
  readonly tailCheckMs: number;
  /** Longest random wait before the tail check after a reconnection, ms. */
  readonly reconnectJitterMs: number;
}

/** A republished entry as received: its revision and the state's previous revision. */
interface Received {
  readonly entry: LogEntry;
  readonly last: number;
}

/** Follows one state through its republished entries (see the module header). */
export class FanoutFollower implements LogFollower {
  private stopped = false;
  /** The revision delivered last. */
  private revision: number;
  /** Received while a fill runs (or before it), in arrival order. */
  private held: Received[] = [];
  private filling = false;
  /** A tail check is due. */
  private checkDue = true;
  /** A republished entry arrived since the tail timer last fired. */
  private heard = false;
  /** Quiet tail checks in a row: each waits twice as long, up to 8 times `tailCheckMs`. */
  private quietChecks = 0;
  /** The sequence of the republished message heard last (-1: none yet). */
  private heardSeq = -1;
  /** A message broke the chain: the stream's identity is checked before anything is handed on. */
  private verifyDue = false;
  private sub: { unsubscribe(): void } | undefined;
  /** The core subject subscribed to. */
  private readonly subject: string;
  private tailTimer: ReturnType<typeof setTimeout> | undefined;
  private reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  private wake: (() => void) | undefined;
  private readonly unwatchStatus: () => void;

  constructor(
    private readonly source: FanoutSource,
    session: StreamSession,
    fromRevision: number,
    private readonly handler: LogFollowHandler,
    private readonly deps: FanoutDeps,
  ) {
    const { StateSyncError } = deps;
    this.revision = Math.max(0, fromRevision - 1);
    const subscribe = session.adapter.subscribe;
    const subject = session.liveSubject;
    if (!subscribe || subject === undefined) {
      throw new StateSyncError(
        "VALIDATION",
        "fan-out needs core subscriptions and a republish rule",
      );
    }
    this.subject = subject;
    let wasOffline = false;
    this.unwatchStatus = source.gate.watchStatus((status) => {
      if (status !== "online")
        wasOffline = true; // `closed`: nothing follows it
      else if (wasOffline) {
        wasOffline = false;
        this.afterReconnect();
      }
    });
    this.sub = subscribe(subject, {
      callback: (err, msg) => (err ? this.denied(err, subject) : this.onMessage(msg)),
    });
    this.armTailCheck();
    void this.fill();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.release();
  }

  private release(): void {
    this.held = [];
    this.unwatchStatus();
    clearTimeout(this.tailTimer);
    clearTimeout(this.reconnectTimer);
    this.wake?.();
    try {
      this.sub?.unsubscribe();
    } catch {
      // the connection is closed
    }
    this.sub = undefined;
  }

  private fail(error: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.release();
    this.handler.onError?.(error);
  }

  private denied(err: Error, subject: string): void {
    const { StateSyncError, toStateSyncError } = this.deps;
    const e = toStateSyncError(err, `follow ${this.source.subject}`);
    this.fail(
      e.code === "PERMISSION_DENIED"
        ? new StateSyncError("PERMISSION_DENIED", `subscribe to ${subject} denied`, { cause: err })
        : e,
    );
  }

  /** Moves on to the receiver's revision when it read further itself (`handler.revision`). */
  private catchUpWithReceiver(): void {
    const r = this.handler.revision?.();
    if (r !== undefined && r > this.revision) this.revision = r;
  }

  /** The subscription's callback: the per-entry path, kept short. */
  private onMessage(msg: CoreMsgLike): void {
    if (this.stopped) return;
    this.catchUpWithReceiver();
    const h = msg.headers;
    const seq = Number(h?.get("Nats-Sequence"));
    const last = Number(h?.get("Nats-Last-Sequence"));
    // Not a republished entry (the server sends stream sequences): dropped like a lost one. A
    // fractional or infinite one, taken as a revision, stalled every fan-out replica `TRUNCATED`.
    if (!(Number.isSafeInteger(seq) && seq > 0 && Number.isSafeInteger(last) && last >= 0)) return;
    // Invariant 5: does it continue the chain of messages heard (or, the first, the revision)?
    const prev = this.heardSeq;
    this.heardSeq = seq;
    const broken = prev < 0 ? seq <= this.revision || last !== this.revision : last !== prev;
    if (broken) this.verifyDue = true;
    // An old entry (read from the log already) is dropped; only new entries count as heard.
    if (seq <= this.revision) {
      if (broken && !this.filling) void this.fill();
      return;
    }
    this.heard = true;
    const entry: LogEntry = {
      revision: seq,
      data: msg.data,
      messageId: this.source.ids.decode(h!.get(this.deps.MSG_ID_HEADER)),
    };
    if (!this.filling && !this.verifyDue && this.held.length === 0 && last === this.revision) {
      this.deliver(entry);
      return;
    }
    this.held.push({ entry, last });
    if (!this.filling) void this.fill();
  }

  private deliver(entry: LogEntry): void {
    if (this.stopped || entry.revision <= this.revision) return;
    this.revision = entry.revision;
    try {
      this.handler.onEntry(entry);
    } catch (err) {
      this.fail(err); // a handler that throws ends the follow: its state is suspect
    }
  }

  /** Fills gaps and runs due tail checks until nothing is held (invariants 2 and 3). */
  private async fill(): Promise<void> {
    if (this.filling || this.stopped) return;
    const { toStateSyncError, FATAL, interruptibleSleep, backoffMs } = this.deps;
    this.filling = true;
    let failures = 0;
    try {
      while (!this.stopped && (this.held.length > 0 || this.checkDue || this.verifyDue)) {
        try {
          await this.step();
          failures = 0;
        } catch (err) {
          if (this.stopped) return;
          const error = toStateSyncError(err, `follow ${this.source.subject}`);
          if (FATAL.has(error.code)) return this.fail(error);
          if (this.source.gate.connectionClosed) return;
          const sleep = interruptibleSleep(backoffMs(failures++));
          this.wake = sleep.wake;
          await sleep.done;
          this.wake = undefined;
        }
      }
    } finally {
      this.filling = false;
    }
  }

  private async step(): Promise<void> {
    if (this.verifyDue) {
      // Invariant 5: what was heard so far is of the stream as it is now, or LOG_REPLACED.
      this.verifyDue = false;
      try {
        await this.source.verify();
      } catch (err) {
        this.verifyDue = true;
        throw err;
      }
      return;
    }
    this.catchUpWithReceiver();
    const head = this.held[0];
    if (head) {
      if (head.entry.revision <= this.revision) {
        this.held.shift();
        return;
      }
      if (head.last !== this.revision) {
        await this.readUpTo(head.entry.revision - 1, head.last);
        if (this.stopped) return;
        if (this.revision !== head.last) {
          // Short of the entry the headers name (a compaction truncated the gap meanwhile, and
          // maybe `head` too), or headers that name none (2.9.10 after a refused publish sends
          // `Nats-Last-Sequence: 0`): the log's own range read decides, through `head`, then
          // on to the latest revision (the log starts at a snapshot entry). `head` is handed
          // on only once the read reached the entry before it (invariant 2). Before, it was
          // handed on after a hole when a second compaction had purged past the latest
          // revision read (a trial: replicas stalled TRUNCATED, or in a shared stream held a
          // wrong state, missed unconditional commands, without an event).
          await this.readUpTo(head.entry.revision);
          if (this.stopped || this.revision >= head.entry.revision) return;
          await this.readUpTo(await this.source.latest());
          if (this.stopped) return;
          if (this.revision !== head.last) {
            // Tried again after a backoff (a log that went back, or keeps being truncated).
            throw new this.deps.StateSyncError(
              "UNAVAILABLE",
              `follow ${this.source.subject}: the log's read did not reach the entry before revision ${head.entry.revision} yet`,
            );
          }
        }
      }
      this.held.shift();
      this.deliver(head.entry);
      return;
    }
    this.checkDue = false;
    const latest = await this.source.latest();
    if (latest > this.revision) await this.readUpTo(latest, latest);
    // An operator may have removed the republish rule (or changed where it sends): nothing
    // would arrive any more. The session holds the rule as `latest` just read it.
    const s = await this.source.ready();
    if (!this.stopped && s.liveSubject !== this.subject) {
      this.fail(
        new this.deps.StateSyncError(
          "UNAVAILABLE",
          `follow ${this.source.subject}: the stream no longer republishes it on ${this.subject}`,
          { details: { republishGone: true, next: this.revision + 1 } },
        ),
      );
    }
  }

  /**
   * Reads and delivers the entries after the current revision up to `to`: by the gap read
   * (direct gets where allowed, `fanout-gap-read.ts`) that expects `expected` as the last one, or,
   * without `expected`, by the log's own range read (used-up sequences, truncation).
   */
  private async readUpTo(to: number, expected?: number): Promise<void> {
    this.catchUpWithReceiver();
    if (to <= this.revision) return;
    const from = this.revision + 1;
    const entries =
      expected === undefined
        ? this.source.read(from, to)
        : readGap(this.source, await this.source.ready(), from, to, expected, this.deps);
    for await (const e of entries) {
      if (this.stopped) return;
      this.deliver(e);
    }
  }

  /**
   * Schedules the quiet-subscription tail check (invariant 3): the timer fires every
   * `tailCheckMs` (jittered) and checks only when nothing arrived since it last fired, so the
   * per-entry path touches no timer.
   */
  private armTailCheck(): void {
    if (this.stopped) return;
    const ms = this.source.tailCheckMs * 2 ** this.quietChecks * (0.5 + Math.random());
    this.tailTimer = setTimeout(() => {
      if (this.heard) {
        this.quietChecks = 0;
      } else {
        this.quietChecks = Math.min(3, this.quietChecks + 1);
        this.checkDue = true;
        void this.fill();
      }
      this.heard = false;
      this.armTailCheck();
    }, ms);
  }

  private afterReconnect(): void {
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      this.checkDue = true;
      void this.fill();
    }, Math.random() * this.source.reconnectJitterMs);
  }
}
