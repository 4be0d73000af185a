import { StateSyncError, type StateSyncErrorCode } from "../errors.js";
import type { LogEntry, LogFollowHandler, LogFollower } from "../log.js";
import type { ConnectionGate } from "./connection-gate.js";
import { cutShort } from "./cut-short.js";
import { ConsumerDisposals } from "./consumer-disposals.js";
import { toStateSyncError } from "./nats-errors.js";
import type { JetStreamApi } from "./adapter.js";
import type { ConsumerLike, ConsumerMessagesLike, JsMsgLike } from "./nats-types.js";
import {
  backoffMs,
  entryFromJsMsg,
  interruptibleSleep,
  randomToken,
  skippedEntry,
  withDeadline,
  type MessageIdCodec,
} from "./util.js";

/** What a {@link JetStreamFollower} needs from the log. */
export interface FollowSource {
  readonly gate: ConnectionGate;
  readonly stream: string;
  readonly subject: string;
  readonly timeoutMs: number;
  /** Reads `Nats-Msg-Id` back into message ids. */
  readonly ids: MessageIdCodec;
  /** The JetStream API and the stream's creation time as last seen (throws like the log). */
  ready(): Promise<{ api: JetStreamApi; created: string }>;
  /** The stream's creation time now; throws `TRUNCATED` when the stream no longer exists. */
  streamCreated(): Promise<string>;
  /** True when every sequence of the stream belongs to the subject (own-stream layout). */
  readonly contiguous: boolean;
  /** Whether the stream (its leader) holds a message of the subject at exactly `seq`. */
  entryExists(seq: number): Promise<boolean>;
  /** True when the stream never stored anything at `from..to` (`LogEntry.skipped`). */
  holes?(from: number, to: number): Promise<boolean>;
}

/** Errors a follower reports through `onError` and stops on; others are retried. */
export const FATAL: ReadonlySet<StateSyncErrorCode> = new Set([
  "PERMISSION_DENIED",
  "TRUNCATED",
  "LOG_REPLACED",
  "STREAM_CONFIG",
  "UNSUPPORTED_SERVER",
]);

/** Consumer notifications (nats.js `ConsumerEvents`) after which the stream is re-checked. */
const RECHECK = new Set(["ordered_consumer_recreated", "stream_not_found", "consumer_deleted"]);

/** Messages asked for per pull while following; refilled at 75% (nats.js `consume`). */
const FOLLOW_BATCH = 256;
/** Pull expiry; idle heartbeats come every half of it, a lost consumer shows after two missed. */
const FOLLOW_EXPIRES_MS = 10_000;
/** How long `stop()` waits for the server to create, then to delete, the consumer, ms. */
const RELEASE_WAIT_MS = 2_000;

/**
 * Follows one subject with an ordered consumer's `consume()` (jetstream-notes "Reading"): the
 * client recreates the consumer from its cursor after a reconnect, a server restart or a
 * delivery gap. On top of it this follower
 * - delivers each stream sequence once, in order, synchronously from the client's callback;
 * - checks the stream's creation time whenever the client recreates the consumer, holding
 *   deliveries until it knows, and reports `TRUNCATED` when the stream was deleted or recreated
 *   (its new sequences belong to another log);
 * - in an owned stream (contiguous), never hands on a jump over a sequence the stream still
 *   holds: the consumer's replica lags the leader (seen after a cluster failover, where it
 *   delivered later sequences first), so it starts a new consumer at the missing sequence;
 *   sequences it never stored are handed on as `skipped` entries, any other jump as it is;
 * - reports `PERMISSION_DENIED` as soon as the server rejects this consumer's subjects;
 * - retries other failures with backoff until stopped, or until the connection is closed for
 *   good (then it ends quietly; the log is `offline`).
 * No entry is delivered after `stop()` is called; it resolves once the server's consumer is
 * deleted (at most {@link RELEASE_WAIT_MS} later; not waited for while the connection is down)
 * and a creation in flight settled.
 */
export class JetStreamFollower implements LogFollower {
  private stopped = false;
  private next: number;
  private attempt = 0;
  private consumer: ConsumerLike | undefined;
  private messages: ConsumerMessagesLike | undefined;
  private readonly disposals = new ConsumerDisposals();
  private holding = false;
  /** Messages received and not delivered yet, in order (while holding or checking a gap). */
  private held: JsMsgLike[] = [];
  /** The attempt whose consumer recreation is being verified. */
  private verifying: number | undefined;
  /** A jump in sequences is being checked: deliveries wait. */
  private gapChecking = false;
  /** Jumps up to this sequence were checked and are truncations: deliver them. */
  private gapAcceptedUpTo = 0;
  /** The consumer is being replaced: ignore what it still sends. */
  private restarting = false;
  private wake: (() => void) | undefined;
  private readonly namePrefix = `ssf_${randomToken()}`;
  private readonly unwatchPermission: () => void;

  constructor(
    private readonly source: FollowSource,
    fromRevision: number,
    private readonly handler: LogFollowHandler,
  ) {
    this.next = Math.max(1, fromRevision);
    this.unwatchPermission = source.gate.onPermissionError((ctx) => {
      if (ctx.subject.includes(this.namePrefix)) {
        this.fail(
          new StateSyncError(
            "PERMISSION_DENIED",
            `follow ${source.subject}: ${ctx.operation} to ${ctx.subject} denied`,
          ),
        );
      }
    });
    this.stopping.catch(() => undefined);
    void this.run();
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.release();
    // nats.js cannot cancel a consumer creation: one in flight settles before the owner closes
    // the connection (else nats.js retried it on a timer for minutes and the process did not exit),
    // on a connection that answers: not once that connection was lost (its answer cannot come;
    // closing the connection fails it at once: close() took the whole requestTimeoutMs, 60 s in a
    // CI run), and not for longer than a delete (a frozen server held close() as long: trials).
    const { creating, creatingSince: since } = this;
    if (creating && !this.source.gate.lostSince(since)) {
      const settled = cutShort(this.source.gate, creating, "consumer create");
      await withDeadline(settled, RELEASE_WAIT_MS, "consumer create").catch(() => undefined);
    }
    // Deleted before the connection goes; not waited for while it is down or once it is lost
    // (the answer cannot come; close() took 2 s more for nothing: trials). The server drops the
    // consumer once idle (`inactive_threshold`).
    if (this.source.gate.status === "online") {
      const settled = this.disposals.settled(RELEASE_WAIT_MS);
      await cutShort(this.source.gate, settled, "consumer delete").catch(() => undefined);
    }
  }

  /** The client's consumer creation or `consume()` in flight, if any, and the gate's `disconnects` then. */
  private creating: Promise<unknown> | undefined;
  private creatingSince = 0;
  private track<T>(p: Promise<T>): Promise<T> {
    this.creating = p;
    this.creatingSince = this.source.gate.disconnects;
    const clear = () => {
      if (this.creating === p) this.creating = undefined;
    };
    p.then(clear, clear);
    return p;
  }

  private abortPending!: () => void;
  /** Rejects when the follower stops: ends a pending consumer creation and its deadline timer. */
  private readonly stopping = new Promise<never>((_, reject) => {
    this.abortPending = () => reject(new StateSyncError("CLOSED", "the follower stopped"));
  });

  /** Stops the pull and deletes the consumer (`disposals`). */
  private release(): void {
    this.abortPending();
    this.attempt += 1;
    this.unwatchPermission();
    this.wake?.();
    const { messages, consumer } = this;
    this.messages = undefined;
    this.consumer = undefined;
    this.held = [];
    // No pull yet (a consume() in flight: nats.js creates the server's consumer in it), nothing
    // to delete here: `run` disposes of what it brings once it settles.
    if (consumer && messages) this.disposals.dispose(consumer, messages);
  }

  private fail(error: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.release();
    this.handler.onError?.(error);
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      const attempt = ++this.attempt;
      // A new consumer starts at `next`: whatever the previous one sent and was held is stale.
      this.held = [];
      this.holding = false;
      this.gapChecking = false;
      this.restarting = false;
      let creating = true; // until the consumer is created (consume() resolved)
      try {
        const { api, created } = await this.source.ready();
        if (this.stopped) return;
        const what = `follow ${this.source.subject}`;
        const consumer = await withDeadline(
          this.track(
            api.orderedConsumer(this.source.stream, {
              filterSubjects: this.source.subject,
              opt_start_seq: this.next,
              name_prefix: this.namePrefix,
            }),
          ),
          this.source.timeoutMs,
          what,
          // A consumer created after the follower stopped (or gave up on it) is deleted at once.
          { abort: this.stopping, onLate: (c) => void c.delete().catch(() => undefined) },
        );
        if (this.stopped || attempt !== this.attempt) {
          void consumer.delete().catch(() => undefined);
          return;
        }
        this.consumer = consumer;
        const consuming = this.track(
          consumer.consume({
            // Sized like a range read's pulls (pull-budget.ts): no slow-consumer cut.
            max_messages: this.source.gate.pulls.batch(FOLLOW_BATCH),
            expires: FOLLOW_EXPIRES_MS,
            callback: (m) => {
              if (attempt === this.attempt) this.onMessage(m);
            },
          }),
        );
        const release = (m: ConsumerMessagesLike) => this.disposals.dispose(consumer, m);
        // A cut while nats.js creates the consumer ends the wait at once (cut-short.ts).
        const cut = cutShort(this.source.gate, consuming, what, release);
        const limits = { abort: this.stopping, onLate: release };
        const messages = await withDeadline(cut, this.source.timeoutMs * 2, what, limits);
        if (this.stopped || attempt !== this.attempt) {
          this.disposals.dispose(consumer, messages);
          return;
        }
        this.messages = messages;
        creating = false;
        failures = 0;
        void this.watchConsumer(messages, created, attempt);
        const ended = await messages.closed();
        if (this.stopped || attempt !== this.attempt) return;
        throw ended ?? new StateSyncError("UNAVAILABLE", `${what}: the consumer ended`);
      } catch (err) {
        if (this.stopped) return;
        let error = toStateSyncError(err, `follow ${this.source.subject}`);
        // The client gives up on a consumer it could not create at once (adapter-v2.ts): a
        // "stream not found" then may be a cluster node that does not know the stream yet.
        if (creating && error.code === "TRUNCATED") error = await this.stillThere(error);
        if (this.stopped) return;
        if (FATAL.has(error.code)) {
          this.fail(error);
          return;
        }
        this.messages?.stop();
        this.messages = undefined;
        this.consumer?.delete().catch(() => undefined);
        this.consumer = undefined;
        // A closed connection never comes back: end quietly (the log reports `offline`).
        if (this.source.gate.connectionClosed) return;
        const sleep = interruptibleSleep(backoffMs(failures++));
        this.wake = sleep.wake;
        await sleep.done;
        this.wake = undefined;
      }
    }
  }

  /**
   * `error` (a consumer creation's "stream not found") as the stream's own check sees it: the
   * error of that check (`TRUNCATED`, `LOG_REPLACED`, or `UNAVAILABLE` while a cluster settles),
   * or `UNAVAILABLE` (tried again) when the stream is there.
   */
  private async stillThere(error: StateSyncError): Promise<StateSyncError> {
    try {
      await this.source.streamCreated();
    } catch (e) {
      return toStateSyncError(e, `follow ${this.source.subject}`);
    }
    return new StateSyncError("UNAVAILABLE", `${error.message}; the stream is there: tried again`, {
      cause: error,
    });
  }

  /** Re-checks the stream whenever the client recreates the consumer (or misses the stream). */
  private async watchConsumer(
    messages: ConsumerMessagesLike,
    created: string,
    attempt: number,
  ): Promise<void> {
    try {
      for await (const s of await messages.status()) {
        if (this.stopped || attempt !== this.attempt) return;
        if (RECHECK.has(s.type)) {
          this.holding = true;
          void this.verify(created, attempt);
        }
      }
    } catch {
      // ends with the consumer
    }
  }

  private async verify(created: string, attempt: number): Promise<void> {
    if (this.verifying === attempt) return;
    this.verifying = attempt;
    try {
      for (let failures = 0; !this.stopped && attempt === this.attempt; failures++) {
        try {
          const now = await this.source.streamCreated();
          if (now !== created) {
            this.fail(
              new StateSyncError(
                "LOG_REPLACED",
                `follow ${this.source.subject}: stream ${this.source.stream} was deleted and created again`,
                { details: { created, now } },
              ),
            );
            return;
          }
          this.holding = false;
          this.flush();
          return;
        } catch (err) {
          const error = toStateSyncError(err, `follow ${this.source.subject}`);
          if (FATAL.has(error.code)) {
            this.fail(error);
            return;
          }
          const sleep = interruptibleSleep(backoffMs(failures));
          this.wake = sleep.wake;
          await sleep.done;
        }
      }
    } finally {
      if (this.verifying === attempt) this.verifying = undefined;
    }
  }

  private onMessage(m: JsMsgLike): void {
    if (this.stopped || this.restarting) return;
    this.held.push(m);
    this.flush();
  }

  /** Delivers held messages in order while nothing holds them back. */
  private flush(): void {
    while (this.held.length > 0 && !this.holding && !this.gapChecking && !this.stopped) {
      this.deliver(this.held.shift()!);
    }
  }

  private deliver(m: JsMsgLike): void {
    if (this.stopped || m.seq < this.next) return;
    if (this.source.contiguous && m.seq > this.next && m.seq > this.gapAcceptedUpTo) {
      this.held.unshift(m);
      this.gapChecking = true;
      void this.checkGap(this.next, m.seq, this.attempt);
      return;
    }
    this.hand(entryFromJsMsg(m, this.source.ids));
  }

  private hand(entry: LogEntry): void {
    this.next = entry.revision + 1;
    try {
      this.handler.onEntry(entry);
    } catch (err) {
      this.fail(err); // a handler that throws ends the follow: its state is suspect
    }
  }

  /**
   * The consumer jumped from `next` to `seen` in an owned stream: hand on skipped entries if the
   * stream never stored `next..seen-1`, the jump if it no longer holds `next` (truncated: the
   * synchronizer decides), else start a new consumer at `next` (this one lags the leader).
   */
  private async checkGap(next: number, seen: number, attempt: number): Promise<void> {
    let exists = true;
    let used = false; // next..seen-1 used up without storing anything
    try {
      exists = await this.source.entryExists(next);
      used = !exists && ((await this.source.holes?.(next, seen - 1)) ?? false);
    } catch (err) {
      const error = toStateSyncError(err, `follow ${this.source.subject}`);
      if (FATAL.has(error.code)) {
        this.fail(error);
        return;
      }
      // Unknown: take the safe way and read it again.
    }
    if (this.stopped || attempt !== this.attempt) return;
    this.gapChecking = false;
    if (used) for (let r = next; r < seen && !this.stopped; r++) this.hand(skippedEntry(r));
    else if (!exists) this.gapAcceptedUpTo = seen;
    if (used || !exists) return this.flush();
    this.held = [];
    this.restarting = true;
    const messages = this.messages;
    this.messages = undefined;
    messages?.stop(); // run() sees the consumer end and starts a new one at `next`
  }
}
