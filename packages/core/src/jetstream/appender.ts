/**
 * Appends to a log's subject with exactly-once message ids (jetstream-notes "Conditional append",
 * "Lost acknowledgements").
 *
 * Responsibilities: check an append's arguments and size, publish it with `Nats-Msg-Id` (the
 * layout's {@link MessageIdCodec} namespaces ids in a shared stream) and, for a conditional
 * append, `Nats-Expected-Last-Sequence` (own stream) or `Nats-Expected-Last-Subject-Sequence`
 * (shared stream); answer `{ revision, duplicate }`; map failures (10071 → `CONFLICT`, a timeout
 * or lost connection → `UNAVAILABLE`: the outcome is unknown and the caller re-sends the same
 * bytes with the same id).
 *
 * Invariants:
 * 1. Every publish carries a message id, so a re-send inside the stream's duplicate window is
 *    answered with the original sequence (`duplicate: true`) instead of being stored twice.
 * 2. A conditional re-send is always safe (its expected sequence fails once anything landed).
 *    An unconditional one is not once the server may have forgotten the id: the appender
 *    remembers the first send time of each unacknowledged unconditional id and refuses
 *    (`UNKNOWN_OUTCOME`, nothing sent) a re-send that might be answered after
 *    `first send + duplicate_window - request timeout - max(1 s, window / 10)`.
 * 3. That memory is bounded: past 1,024 unacknowledged ids, those older than twice the window
 *    are dropped (a re-send of one of them is then sent as a first attempt; by then the caller
 *    has long given up on it).
 */
import { z } from "zod/v4";
import { StateSyncError } from "../errors.js";
import type { AppendOptions, AppendResult } from "../log.js";
import type { StreamOpener, StreamSession } from "./stream-session.js";
import type { MessageIdCodec } from "./util.js";
import { whenAborted } from "../abort-watch.js";

/** Longest message id accepted, in UTF-8 bytes. */
export const MAX_MESSAGE_ID_BYTES = 256;

const encoder = new TextEncoder();

/** What a {@link JetStreamAppender} needs from its log. */
export interface JetStreamAppenderOptions {
  readonly opener: StreamOpener;
  readonly subject: string;
  /** Own-stream layout: expectations are on the stream's last sequence. */
  readonly contiguous: boolean;
  readonly ids: MessageIdCodec;
  /** Timeout of each publish, ms. */
  readonly timeoutMs: number;
}

/** The append half of a `JetStreamLog` (see the module header). */
export class JetStreamAppender {
  /** First send time (ms) of unconditional appends not acknowledged yet, by message id. */
  private readonly unacknowledged = new Map<string, number>();

  constructor(private readonly o: JetStreamAppenderOptions) {}

  /**
   * Appends `data` with `messageId`; conditionally on `expected` (the revision the caller last
   * saw) unless it is undefined. Throws `VALIDATION`, `PAYLOAD_TOO_LARGE` (nothing sent),
   * `UNKNOWN_OUTCOME` (invariant 2), `CONFLICT` (`AppendConflictError`), `UNAVAILABLE`,
   * `PERMISSION_DENIED`, `TRUNCATED`, `STREAM_CONFIG`, `CLOSED`.
   */
  async append(
    data: Uint8Array,
    messageId: string,
    expected: number | undefined,
    options: AppendOptions = {},
  ): Promise<AppendResult> {
    if (!(data instanceof Uint8Array)) {
      throw new StateSyncError("VALIDATION", "data must be a Uint8Array");
    }
    checkMessageId(messageId);
    const s = await this.o.opener.ready();
    const max = this.o.opener.maxEntryBytes(s);
    if (data.byteLength > max) {
      throw new StateSyncError(
        "PAYLOAD_TOO_LARGE",
        `entry of ${data.byteLength} bytes exceeds the log's maximum of ${max}`,
        { details: { bytes: data.byteLength, maxEntryBytes: max } },
      );
    }
    if (expected === undefined) this.checkResend(messageId, s);
    const expect =
      expected === undefined
        ? undefined
        : this.o.contiguous
          ? { lastSequence: expected }
          : { lastSubjectSequence: expected };
    const signal = options.signal;
    if (signal?.aborted) throw aborted("before it was sent", true);
    // The caller's limits bound this attempt too (issue 10, case 6), within the request timeout.
    const timeout = Math.max(1, Math.min(this.o.timeoutMs, options.timeoutMs ?? Infinity));
    const publish = s.api.publish(this.o.subject, data, {
      msgID: this.o.ids.encode(messageId),
      timeout,
      ...(expect ? { expect } : {}),
    });
    let stop: (() => void) | undefined;
    try {
      const ack = await (signal
        ? Promise.race([
            publish,
            new Promise<never>((_, reject) => {
              stop = whenAborted(signal, () =>
                reject(aborted("while its answer was awaited", false)),
              );
            }),
          ])
        : publish);
      const revision = this.revisionOf(ack, messageId);
      this.unacknowledged.delete(messageId);
      return { revision, duplicate: ack.duplicate === true };
    } catch (err) {
      if (signal?.aborted) publish.catch(() => undefined); // its answer no longer matters
      throw this.o.opener.failure(err, "append", expected);
    } finally {
      stop?.();
    }
  }

  /**
   * The revision a publish acknowledgement names, checked: a positive sequence. Clustered
   * nats-server before 2.11 answers a re-send whose original is still being replicated with
   * `{ seq: 0, duplicate: true }` and no error (nats-server PR 5827): that was taken for revision 0
   * (the cluster fault test saw an update "acknowledged at revision 0" and applied 0 times). It
   * and any malformed answer leave the outcome unknown: `UNAVAILABLE`, so the caller looks the
   * entry up or re-sends later, when the server knows its sequence.
   */
  private revisionOf(ack: unknown, messageId: string): number {
    // The usual answer, checked by hand (what the schema accepts; zod costs a few µs an append).
    const a = ack as { seq?: unknown; duplicate?: unknown } | null;
    if (
      typeof a === "object" &&
      a !== null &&
      Number.isSafeInteger(a.seq) &&
      (a.seq as number) >= 1 &&
      (a.duplicate === undefined || typeof a.duplicate === "boolean")
    ) {
      return a.seq as number;
    }
    const parsed = pubAckSchema.safeParse(ack);
    if (parsed.success) return parsed.data.seq;
    const pending = (ack as { duplicate?: unknown } | null)?.duplicate === true;
    throw new StateSyncError(
      "UNAVAILABLE",
      pending
        ? `append ${this.o.subject}: the server answered a duplicate of an entry it is still storing (sequence 0); its revision is not known yet`
        : `append ${this.o.subject}: the server's acknowledgement is malformed`,
      { details: { messageId } },
    );
  }

  /** Refuses a late unconditional re-send (invariants 2 and 3). */
  private checkResend(messageId: string, s: StreamSession): void {
    const now = Date.now();
    const first = this.unacknowledged.get(messageId);
    if (first === undefined) {
      if (this.unacknowledged.size >= 1_024) {
        for (const [id, at] of this.unacknowledged) {
          if (now - at > 2 * s.duplicateWindowMs) this.unacknowledged.delete(id);
        }
      }
      this.unacknowledged.set(messageId, now);
      return;
    }
    const window = s.duplicateWindowMs;
    const safeUntil = first + window - this.o.timeoutMs - Math.max(1_000, window / 10);
    if (now < safeUntil) return;
    throw new StateSyncError(
      "UNKNOWN_OUTCOME",
      `append ${this.o.subject}: not re-sending message ${messageId}: the stream's duplicate window ` +
        `(${window} ms) may expire before the server answers, and a re-send could be stored twice`,
      { details: { messageId, duplicateWindowMs: window, firstSentAt: first } },
    );
  }
}

/** Throws `VALIDATION` unless `id` is 1 to {@link MAX_MESSAGE_ID_BYTES} bytes without controls. */
function checkMessageId(id: string): void {
  if (typeof id !== "string" || id.length === 0) {
    throw new StateSyncError("VALIDATION", "messageId must be a non-empty string");
  }
  // A UTF-16 code unit encodes to at most 3 UTF-8 bytes: short ids need no encoding to measure.
  const long = id.length * 3 > MAX_MESSAGE_ID_BYTES;
  if (
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f]/.test(id) ||
    (long && encoder.encode(id).length > MAX_MESSAGE_ID_BYTES)
  ) {
    throw new StateSyncError(
      "VALIDATION",
      `messageId must be at most ${MAX_MESSAGE_ID_BYTES} bytes without control characters`,
    );
  }
}

/** `UNAVAILABLE` for an append whose wait the caller's signal ended. */
function aborted(when: string, notSent: boolean): StateSyncError {
  return new StateSyncError("UNAVAILABLE", `append aborted ${when}`, {
    details: { aborted: true, notSent },
  });
}

/** A publish acknowledgement as statesync relies on it (the rest of its fields are not used). */
const pubAckSchema = z.object({
  seq: z.number().int().min(1),
  duplicate: z.boolean().optional(),
});
