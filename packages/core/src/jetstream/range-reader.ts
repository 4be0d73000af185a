import { isStateSyncError, StateSyncError } from "../errors.js";
import type { LogEntry } from "../log.js";
import type { ConnectionGate } from "./connection-gate.js";
import { toStateSyncError } from "./nats-errors.js";
import type { JetStreamApi } from "./adapter.js";
import type { ConsumerLike, ConsumerMessagesLike } from "./nats-types.js";
import { entryFromJsMsg, randomToken, withDeadline, type MessageIdCodec } from "./util.js";

/** Most messages one pull asks for. */
export const READ_BATCH = 256;
/**
 * Bytes of entries one pull may bring, at most (roughly): the server delivers a pull as fast as
 * it can, and a client that falls 64 MiB behind (`max_pending`) is cut off as a slow consumer.
 * 256 entries of a chunked snapshot are 256 MiB (the benchmark's 100 MB cold start idled for
 * seconds in reconnects and pull expiries), so pulls are sized by the largest entry seen so far,
 * and the first one of a read asks for {@link FIRST_PULL} entries.
 */
const PULL_BYTES = 16 * 1024 * 1024;
/** Messages the first pull of a read asks for, before any entry's size is known. */
const FIRST_PULL = 16;
/** Empty pulls in a row, while the stream says entries remain, after which a read fails. */
const MAX_IDLE_PULLS = 3;
/** New consumers a read starts when one falls behind the stream, before it fails. */
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
 * In an owned stream (contiguous) a jump over a sequence the stream still holds is not passed
 * on: the read starts a new consumer at the missing sequence.
 *
 * Found by the cluster fault test: after a stream leader change the consumer's replica may lag:
 * its `pending` read 0 before `to`, and it even delivered a later sequence before earlier ones
 * it did not have yet. The read used to end short or hand on the gap, which the synchronizer
 * took for a truncation (a replica stalled with `TRUNCATED`) and `history()` returned short.
 *
 * Throws `UNAVAILABLE` (also after repeated empty pulls while entries remain), `PERMISSION_DENIED`
 * (detected from the server's permission violation on this consumer's subjects, which the client
 * would otherwise retry for minutes), `TRUNCATED`.
 */
export async function* readRange(
  source: RangeSource,
  from: number,
  to: number,
  limit = Number.POSITIVE_INFINITY,
): AsyncGenerator<LogEntry> {
  if (from > to || limit <= 0) return;
  const namePrefix = `ssr_${randomToken()}`;
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
  const openConsumer = async (start: number): Promise<ConsumerLike> => {
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
  try {
    consumer = await openConsumer(from);
    let next = from;
    let count = 0;
    let idleRounds = 0;
    let restarts = 0;
    let largest = 0; // bytes of the largest entry read so far (0: none yet)
    while (count < limit && next <= to) {
      const remaining = source.contiguous ? to - next + 1 : READ_BATCH;
      const bySize = largest === 0 ? FIRST_PULL : Math.floor(PULL_BYTES / largest);
      const batch = Math.max(1, Math.min(READ_BATCH, bySize, limit - count, remaining));
      try {
        messages = await withDeadline(
          consumer.fetch({ max_messages: batch, expires }),
          source.timeoutMs + expires,
          what,
          { abort: denied, onLate: (m) => m.stop() },
        );
      } catch (err) {
        throw toStateSyncError(err, what);
      }
      let got = 0;
      let finished = false;
      let drained = false;
      let skipped = false;
      // The pulled messages end with an error of their own (nats.js: 503 no responders while a
      // cluster elects a leader, a dropped connection): mapped like every other call's (found
      // by the cluster fault test, where a raw NatsError stalled an opening replica).
      try {
        for await (const m of messages) {
          if (m.seq < next) continue;
          got += 1;
          if (m.seq > to) {
            finished = true;
            break;
          }
          // Every sequence of an owned stream is this state's: a gap is a truncation only if the
          // stream no longer holds `next`; otherwise this consumer skipped it (its replica lags
          // the leader after a failover) and must not hand the gap on.
          if (source.contiguous && m.seq > next && (await holds(next, next))) {
            skipped = true;
            break;
          }
          next = m.seq + 1;
          count += 1;
          const entry = entryFromJsMsg(m, source.ids);
          if (entry.data.byteLength > largest) largest = entry.data.byteLength;
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
        throw isStateSyncError(err) ? err : toStateSyncError(err, what);
      }
      messages.stop();
      messages = undefined;
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
      if (!skipped && !(await holds(next, to))) break;
      if (got === 0) idleRounds += 1;
      if (idleRounds >= MAX_IDLE_PULLS || ++restarts > MAX_RESTARTS) {
        throw new StateSyncError(
          "UNAVAILABLE",
          `${what}: the consumer does not deliver entries ${next}..${to}, which the stream holds`,
          { details: { next, to } },
        );
      }
      consumer.delete().catch(() => undefined);
      await sleep(50 * restarts);
      consumer = await openConsumer(next);
    }
  } finally {
    unwatch();
    messages?.stop();
    consumer?.delete().catch(() => undefined);
  }
}
