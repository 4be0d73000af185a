import { isStateSyncError, StateSyncError } from "../errors.js";
import type { LogEntry } from "../log.js";
import { closedGateError, type ConnectionGate } from "./connection-gate.js";
import { cutShort } from "./cut-short.js";
import { toStateSyncError } from "./nats-errors.js";
import type { JetStreamApi } from "./adapter.js";
import type { ConsumerLike, ConsumerMessagesLike, JsMsgLike } from "./nats-types.js";
import {
  entryFromJsMsg,
  randomToken,
  skippedEntry,
  withDeadline,
  type MessageIdCodec,
} from "./util.js";

/** Most messages one pull asks for. */
export const READ_BATCH = 256;
// How many bytes a pull may bring (the first pull of a log assumes entries of `max_payload`,
// later ones the largest entry read, quartered after a pull the server cut): pull-budget.ts.
/** Empty pulls in a row, while the stream says entries remain, after which a read fails. */
const MAX_IDLE_PULLS = 3;
/** Pulls of one read the connection may be lost under (then it goes on), before it fails. */
const MAX_CUTS = 8;
/** New consumers a read starts in a row, with no entry read between, before it fails. */
const MAX_RESTARTS = 8;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What {@link readRange} needs from the log. */
export interface RangeSource {
  readonly api: JetStreamApi;
  readonly gate: ConnectionGate;
  readonly stream: string;
  readonly subject: string;
  /** Every sequence of the stream belongs to the subject (own-stream layout). */
  readonly contiguous: boolean;
  readonly timeoutMs: number;
  /** Reads `Nats-Msg-Id` back into message ids. */
  readonly ids: MessageIdCodec;
  /** True when the subject still holds a message with `from <= seq <= to` (after a short pull). */
  hasMore(from: number, to: number): Promise<boolean>;
  /** True when the stream never stored anything at `from..to` (`LogEntry.skipped`; log-reader.ts). */
  holes?(from: number, to: number): Promise<boolean>;
}

/**
 * Reads the messages of one subject with `from <= seq <= to` (at most `limit`), in order, with
 * an ordered consumer (`api.orderedConsumer(stream, { filterSubjects, opt_start_seq })`, never
 * `deliver_policy: "all"`: jetstream-notes "Reading") and `fetch` in batches. `to` must be at
 * most the subject's last sequence: the read stops at `to`; when a message says nothing more is
 * pending (or a pull comes back empty) before `to`, it asks the stream whether entries remain
 * (`hasMore`) and pulls again if so, so it never waits for a pull to expire at the end, and
 * never ends short unless the rest was truncated. The consumer is deleted afterwards (best
 * effort; the server drops it after 5 idle minutes anyway).
 *
 * A jump over sequences the subject still holds is never passed on: the read starts a new
 * consumer at the missing sequence. In an owned stream (contiguous) every jump is checked; in a
 * shared one, where jumps over other states' messages are the rule, a jump is checked when the
 * delivery sequence jumped too, or the server consumer changed under the client (deliveries the
 * client lost). Found in CI ("reads a bounded range", nats.ws 2.x): nats.js 2.x's ordered
 * `fetch()` ends its iterator as soon as the pull is complete, dropping messages it had queued
 * and not yet handed on (the next pull goes on after them); a shared-layout read skipped those
 * entries silently, an owned one ended short when the next delivery lay past `to`.
 * ordered-consumer-v2.ts now keeps them; this check stays for any client that loses deliveries.
 *
 * Found by the cluster fault test: after a stream leader change the consumer's replica may lag:
 * its `pending` read 0 before `to`, and it even delivered a later sequence before earlier ones
 * it did not have yet. The read used to end short or hand on the gap, which the synchronizer
 * took for a truncation (a replica stalled with `TRUNCATED`) and `history()` returned short.
 *
 * The log's `close()` ends a read in flight at once with `CLOSED`, a pull included: its messages
 * are stopped (and the consumer deleted, best effort) before whoever owns the connection closes
 * it. Before (a fresh-eyes trial), a replica's `close()` closed its connection under a `history()`
 * read: nats.js printed "aborting resetPending - connection is closed" and the read ended at its
 * deadline, seconds later, with `CONNECTION_CLOSED` or `UNAVAILABLE`.
 *
 * Throws `UNAVAILABLE` (also after repeated empty pulls while entries remain), `PERMISSION_DENIED`
 * (detected from the server's permission violation on this consumer's subjects, which the client
 * would otherwise retry for minutes), `TRUNCATED`, `CLOSED` (the log was closed).
 */
export async function* readRange(
  source: RangeSource,
  from: number,
  to: number,
  limit = Number.POSITIVE_INFINITY,
): AsyncGenerator<LogEntry> {
  if (from > to || limit <= 0) return;
  const namePrefix = `ssr_${randomToken()}`;
  // Rejects when the read must end whatever it waits for: a denial, or the log's close().
  let reject: (e: StateSyncError) => void = () => undefined;
  const denied = new Promise<never>((_, r) => (reject = r));
  denied.catch(() => undefined);
  const unwatch = source.gate.onPermissionError((ctx) => {
    if (ctx.subject.includes(namePrefix)) {
      reject(
        new StateSyncError(
          "PERMISSION_DENIED",
          `read ${source.subject}: ${ctx.operation} to ${ctx.subject} denied`,
        ),
      );
    }
  });
  const what = `read ${source.subject}`;
  const expires = Math.max(1_000, Math.min(source.timeoutMs, 5_000));
  let consumer: ConsumerLike | undefined;
  let messages: ConsumerMessagesLike | undefined;
  let closed: StateSyncError | undefined;
  /** Throws `CLOSED` once the log was closed (after each wait the close could not end). */
  const assertOpen = () => {
    if (closed) throw closed;
  };
  const unwatchClose = source.gate.onClose(() => {
    closed = closedGateError();
    reject(closed);
    messages?.stop();
  });
  // A lost connection ends the pull at once (nats.js would re-create the ordered consumer and
  // pull again after the reconnection, into the same cut, until the pull expires).
  const unwatchLost = source.gate.watchStatus((status) => {
    if (status !== "online") messages?.stop();
  });
  /** The last delivery of the consumer opened last (see {@link lostBefore}). */
  let last: { consumer: string | undefined; delivery: number } | undefined;
  /** True when deliveries were lost before `m` (a delivery sequence jump, another consumer). */
  const lostBefore = (m: JsMsgLike) => {
    const { consumer: name, deliverySequence } = m.info;
    const lost =
      last !== undefined && (name !== last.consumer || deliverySequence !== last.delivery + 1);
    last = { consumer: name, delivery: deliverySequence };
    return lost;
  };
  const openConsumer = async (start: number): Promise<ConsumerLike> => {
    last = undefined;
    try {
      return await withDeadline(
        source.api.orderedConsumer(source.stream, {
          filterSubjects: source.subject,
          opt_start_seq: Math.max(1, start),
          name_prefix: namePrefix,
        }),
        source.timeoutMs,
        what,
        { abort: denied },
      );
    } catch (err) {
      throw toStateSyncError(err, what);
    }
  };
  /** Asks the stream (its leader) whether the subject holds a message in [a, b]. */
  const holds = async (a: number, b: number): Promise<boolean> => {
    try {
      return await source.hasMore(a, b);
    } catch (err) {
      throw toStateSyncError(err, what);
    }
  };
  const neverStored = async (a: number, b: number, to: number): Promise<boolean> => {
    try {
      return (await source.holes?.(a, Math.min(b, to))) ?? false;
    } catch (err) {
      throw toStateSyncError(err, what);
    }
  };
  try {
    assertOpen();
    consumer = await openConsumer(from);
    let next = from;
    let count = 0;
    let idleRounds = 0;
    let restarts = 0;
    let restartedAt = from;
    const budget = source.gate.pulls;
    let cuts = 0;
    while (count < limit && next <= to) {
      const remaining = source.contiguous ? to - next + 1 : READ_BATCH;
      const batch = budget.batch(Math.min(READ_BATCH, limit - count, remaining));
      const connection = source.gate.disconnects;
      const wasOnline = source.gate.status === "online";
      /** The error of a pull the connection was lost under, if it was (pull-budget.ts rule 2). */
      const cut = (): StateSyncError | undefined => {
        if (!wasOnline || !source.gate.lostSince(connection)) return undefined;
        const requested = budget.bytes(batch);
        const nextLimit = budget.cut(batch, requested);
        return new StateSyncError(
          "UNAVAILABLE",
          `${what}: the connection was lost while a pull of ${batch} entries (about ${requested} bytes) was delivered; a server whose max_pending is below that cuts a slow consumer, so this log's pulls now ask for at most ${nextLimit} bytes (cut ${cuts + 1} of this read)`,
          { details: { next, to, cut: true, pullBytes: requested, nextPullBytes: nextLimit } },
        );
      };
      let lost: StateSyncError | undefined;
      try {
        // A cut while nats.js creates the consumer ends the wait at once (cut-short.ts).
        const pull = consumer.fetch({ max_messages: batch, expires });
        messages = await withDeadline(
          cutShort(source.gate, pull, what, (m) => m.stop()),
          source.timeoutMs + expires,
          what,
          { abort: denied, onLate: (m) => m.stop() },
        );
      } catch (err) {
        assertOpen();
        lost = cut();
        if (!lost) throw toStateSyncError(err, what);
      }
      let got = 0;
      let finished = false;
      let drained = false;
      let skipped = false;
      // The pulled messages end with an error of their own (nats.js: 503 no responders while a
      // cluster elects a leader, a dropped connection): mapped like every other call's (found
      // by the cluster fault test, where a raw NatsError stalled an opening replica).
      try {
        for await (const m of lost ? [] : messages!) {
          const dropped = lostBefore(m);
          if (m.seq < next) continue;
          got += 1;
          // A gap is a truncation only if the subject no longer holds what it jumped over;
          // otherwise the consumer skipped it (its replica lags the leader after a failover) or
          // the client lost it, and the gap must not be handed on (module header).
          if (
            m.seq > next &&
            (source.contiguous || dropped) &&
            (await holds(next, Math.min(m.seq - 1, to)))
          ) {
            skipped = true;
            break;
          }
          // Sequences the stream used up without storing anything: stepped over, not a gap.
          if (source.contiguous && m.seq > next && (await neverStored(next, m.seq - 1, to))) {
            for (const last = Math.min(m.seq - 1, to); next <= last; next++) {
              count += 1;
              yield skippedEntry(next);
            }
          }
          if (m.seq > to) {
            finished = true;
            break;
          }
          next = m.seq + 1;
          count += 1;
          const entry = entryFromJsMsg(m, source.ids);
          budget.observe(entry.data.byteLength);
          yield entry;
          if (m.seq >= to || count >= limit) {
            finished = true;
            break;
          }
          // The consumer has nothing more right now. Not proof that nothing remains: on a
          // cluster the consumer's replica may lag the stream leader that `to` came from.
          if (m.info.pending === 0) {
            drained = true;
            break;
          }
        }
      } catch (err) {
        assertOpen();
        lost = cut();
        if (!lost) throw isStateSyncError(err) ? err : toStateSyncError(err, what);
      }
      messages?.stop();
      messages = undefined;
      assertOpen(); // a close() stopped the messages: no more entries, not a short pull
      if (!lost && !finished && !drained && !skipped) lost = cut();
      if (lost) {
        // The connection was lost under this pull (a slow-consumer cut, say): go on with a
        // new consumer at `next` once it is back, pulling less (pull-budget.ts); a few times.
        if (++cuts > MAX_CUTS) throw lost;
        await Promise.race([source.gate.online(source.timeoutMs, lost), denied]);
        consumer.delete().catch(() => undefined);
        consumer = await openConsumer(next);
        continue;
      }
      if (got > 0) budget.delivered();
      if (finished) break;
      if (got > 0 && !drained && !skipped) {
        idleRounds = 0;
        continue;
      }
      // The consumer skipped an entry the stream holds, said nothing more is pending, or its
      // pull came back empty. Ask the stream (its leader) whether entries remain in
      // [next, to]: none when the rest was purged meanwhile (a legitimately short read). Else
      // the consumer is behind the leader (and what it delivers into an abandoned pull is
      // lost to it): start a new one at `next`, and fail after a few tries rather than end
      // the read short (callers take a short read for a truncation).
      if (!skipped && !(await holds(next, to))) {
        // Nothing stored up to `to`: sequences the stream used up are stepped over.
        if (source.contiguous && (await neverStored(next, to, to))) {
          for (; next <= to; next++) yield skippedEntry(next);
        }
        break;
      }
      assertOpen();
      if (got === 0) idleRounds += 1;
      if (next > restartedAt) restarts = 0; // entries were read since the last restart
      restartedAt = next;
      if (idleRounds >= MAX_IDLE_PULLS || ++restarts > MAX_RESTARTS) {
        throw new StateSyncError(
          "UNAVAILABLE",
          `${what}: the consumer does not deliver entries ${next}..${to}, which the stream holds`,
          { details: { next, to } },
        );
      }
      consumer.delete().catch(() => undefined);
      await sleep(50 * restarts);
      assertOpen();
      consumer = await openConsumer(next);
    }
  } finally {
    unwatch();
    unwatchLost();
    unwatchClose();
    messages?.stop();
    consumer?.delete().catch(() => undefined);
  }
}
