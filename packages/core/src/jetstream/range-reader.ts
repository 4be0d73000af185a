import { StateSyncError } from "../errors.js";
import type { LogEntry } from "../log.js";
import type { ConnectionGate } from "./connection-gate.js";
import { toStateSyncError } from "./nats-errors.js";
import type { ConsumerLike, ConsumerMessagesLike, JetStreamClientLike } from "./nats-types.js";
import { entryFromJsMsg, randomToken, withDeadline, type MessageIdCodec } from "./util.js";

/** Most messages one pull asks for. */
export const READ_BATCH = 256;

/** What {@link readRange} needs from the log. */
export interface RangeSource {
  readonly js: JetStreamClientLike;
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
 * an ordered consumer (`js.consumers.get(stream, { filterSubjects, opt_start_seq })`, never
 * `deliver_policy: "all"`: jetstream-notes "Reading") and `fetch` in batches. `to` must be at
 * most the subject's last sequence: the read stops at `to`, or when a message says nothing is
 * pending, so it never waits for a pull to expire while messages remain. The consumer is
 * deleted afterwards (best effort; the server drops it after 5 idle minutes anyway).
 *
 * Throws `UNAVAILABLE`, `PERMISSION_DENIED` (detected from the server's permission violation on
 * this consumer's subjects, which the client would otherwise retry for minutes), `TRUNCATED`.
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
  try {
    try {
      consumer = await withDeadline(
        source.js.consumers.get(source.stream, {
          filterSubjects: source.subject,
          opt_start_seq: Math.max(1, from),
          name_prefix: namePrefix,
        }),
        source.timeoutMs,
        what,
        { abort: denied },
      );
    } catch (err) {
      throw toStateSyncError(err, what);
    }
    let next = from;
    let count = 0;
    let idleRounds = 0;
    while (count < limit && next <= to) {
      const remaining = source.contiguous ? to - next + 1 : READ_BATCH;
      const batch = Math.max(1, Math.min(READ_BATCH, limit - count, remaining));
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
      for await (const m of messages) {
        got += 1;
        if (m.seq < next) continue;
        if (m.seq > to) {
          finished = true;
          break;
        }
        next = m.seq + 1;
        count += 1;
        yield entryFromJsMsg(m, source.ids);
        if (m.seq >= to || m.info.pending === 0 || count >= limit) {
          finished = true;
          break;
        }
      }
      messages.stop();
      messages = undefined;
      if (finished) break;
      if (got === 0) {
        // The pull expired empty: the rest was purged meanwhile, or the consumer was reset.
        idleRounds += 1;
        if (idleRounds >= 3 || !(await source.hasMore(next, to))) break;
      } else {
        idleRounds = 0;
      }
    }
  } finally {
    unwatch();
    messages?.stop();
    consumer?.delete().catch(() => undefined);
  }
}
