import { abortError, sleep } from "../backoff.js";
import { checkOwnEntry, decodeEntryText, type Entry } from "../entry.js";
import { MAX_NESTING_DEPTH } from "../entry-limits.js";
import { storedJson } from "../json.js";
import { AppendConflictError, isStateSyncError, StateSyncError } from "../errors.js";
import type { LogEntry, LogInfo, RevisionedLog } from "../log.js";
import { randomId } from "../prng.js";
import type { SyncStats } from "../synchronizer-types.js";
import type { OwnEntries, OwnEntry } from "./own-entries.js";
import { OwnLookup, type OwnHistory } from "./own-lookup.js";
import type { StatusHub } from "./status.js";
import { heldByAnother, idTaken, MAX_TAKEN_IDS } from "./taken-id.js";
import {
  lookupBounded,
  endedWhy,
  outcomeUnknown,
  storedElsewhere,
  unknownBecause,
  unreachableFor,
} from "./append-errors.js";
import { ENDED, waitLimits, within, type WaitLimits } from "./wait-limits.js";

const encoder = new TextEncoder();

/** An entry ready to append: its bytes (checked like a reader checks them) and its decoding. */
export type Prepared = OwnEntry;

/** How long an append may take and what ends it early. */
export interface AppendLimits {
  /** How long an append whose outcome is unknown is re-sent before `UNKNOWN_OUTCOME`, ms. */
  readonly timeoutMs: number;
  /** Ends the re-sends at once (`ABORTED` if nothing was sent, else `UNKNOWN_OUTCOME`). */
  readonly signal?: AbortSignal | undefined;
  /**
   * When the re-sends end, ms since the epoch, when earlier than `timeoutMs` from now (an
   * update's deadline, set when it was called: its waits before the append count).
   */
  readonly deadline?: number | undefined;
  /** An unconditional append's part in the contention rules (invariant 2). */
  readonly contend?: Contender | undefined;
}

/** An unconditional append's part in the contention rules (`Contention.contender`). */
export interface Contender {
  /**
   * Runs before a re-send once `conflicts` re-sends conflicted, within the update's limits. What
   * it throws is ignored: only ordering is at stake.
   */
  before(conflicts: number, limits: WaitLimits): Promise<void>;
  /** The append is decided: stored, or failed. */
  done(): void;
}

/** A conditional append's outcome: stored (as `entry`), or the log had moved on. */
export type ConditionalOutcome =
  | { readonly kind: "committed"; readonly entry: LogEntry }
  | { readonly kind: "conflict"; readonly latest: number | undefined };

/**
 * Appends entries exactly once (jetstream-notes, "Lost acknowledgements"; after Pravega's log
 * client class). It owns the message ids: `<clientId>-<random per instance>-<counter>`.
 *
 * Invariants:
 * 1. Every entry is encoded and decoded with the reader's own checks before it is sent: an entry
 *    no replica would accept is never appended (`VALIDATION`), nor one over the log's limit
 *    (`PAYLOAD_TOO_LARGE`).
 * 2. An attempt whose outcome is unknown is re-sent with the same bytes and the same message id,
 *    never re-computed, until the deadline. A conditional one is re-sent on the same revision; a
 *    conflict then is resolved by looking the message id up (`OwnLookup`). An unconditional one
 *    is looked up before every re-send, and re-sent only on the tail it checked (conditionally):
 *    neither a server that forgot the id (a restart after a purge, the duplicate window) nor a
 *    first attempt still in flight can store it twice (issue 10, case 2). Re-sends that conflict
 *    take their turn like conditional writers (`contend`), or others could win every race.
 * 3. The caller learns `UNKNOWN_OUTCOME` only when an attempt may have been stored; when nothing
 *    was ever sent the original error (or `ABORTED`) tells it that nothing was appended.
 * 4. While an entry travels, the replica knows it as its own (`OwnEntries`) until it fails.
 */
export class Appender {
  private counter = 0;
  private readonly instanceId = randomId(8);
  private maxBytes: number | undefined;
  private readonly lookup: OwnLookup;

  constructor(
    private readonly log: RevisionedLog,
    private readonly own: OwnEntries,
    private readonly history: OwnHistory,
    private readonly status: StatusHub,
    private readonly stats: SyncStats,
    private readonly clientId: string,
    /** While the reconnection's check is unanswered, resolves when it answered (`Reader`). */
    private readonly held: () => Promise<void> | undefined = () => undefined,
  ) {
    this.lookup = new OwnLookup(log, history);
  }

  /** Records what the log said of itself (its entry size limit). */
  learn(info: LogInfo): void {
    this.maxBytes = info.maxEntryBytes;
  }

  /** The log's entry size limit, bytes (from `info()`; Infinity while unknown). */
  limit(): Promise<number> {
    return this.maxBytes !== undefined ? Promise.resolve(this.maxBytes) : this.maxEntryBytes();
  }

  /**
   * Encodes `entry` and checks its size and format (invariant 1; `what` names it in errors): a
   * command entry decoded from its text, any other checked as built (see `checkOwnEntry`).
   */
  async prepare(entry: Entry, what: string): Promise<Prepared> {
    const text = storedJson(entry, MAX_NESTING_DEPTH, what);
    const data = encoder.encode(text);
    const limit = this.maxBytes ?? (await this.maxEntryBytes());
    if (data.byteLength > limit) {
      throw new StateSyncError(
        "PAYLOAD_TOO_LARGE",
        `${what} is ${data.byteLength} bytes; the log accepts at most ${limit} (the stream's max_msg_size or the server's max_payload: make the update smaller, or raise them, docs/servers.md)`,
        { details: { bytes: data.byteLength, maxEntryBytes: limit } },
      );
    }
    // A command's bytes are decoded as a reader decodes them, from `text` (well-formed UTF-16).
    const decoded =
      entry.kind === "command" || entry.kind === "commands"
        ? decodeEntryText(text, data.byteLength)
        : checkOwnEntry(entry, text, data.byteLength);
    if (!decoded.ok) {
      throw new StateSyncError("VALIDATION", `${what} cannot be stored: ${decoded.error.message}`, {
        cause: decoded.error,
      });
    }
    return { data, decoded };
  }

  /**
   * Appends `prepared` only if the log is at `expected`; a conflict is a value, not an error.
   * `sentAs`: the message id of an earlier send of these bytes whose outcome is unknown; the
   * append then goes on as that send's re-send (same id, looked up on a conflict).
   */
  async appendConditional(
    prepared: Prepared,
    expected: number,
    limits: AppendLimits,
    sentAs?: string,
  ): Promise<ConditionalOutcome> {
    if (sentAs === undefined) this.stats.attempts += 1;
    try {
      return { kind: "committed", entry: await this.append(prepared, expected, limits, sentAs) };
    } catch (e) {
      if (!isStateSyncError(e, "CONFLICT")) throw e;
      this.stats.conflicts += 1;
      return { kind: "conflict", latest: (e as AppendConflictError).latestRevision };
    }
  }

  /**
   * Appends `prepared` at the tail; `resumed`: as the re-send of an earlier send of it whose
   * outcome is unknown (its message id, the replica's revision before it was sent).
   */
  appendUnconditional(
    prepared: Prepared,
    limits: AppendLimits,
    resumed?: { readonly sentAs: string; readonly after: number },
  ) {
    return this.append(prepared, undefined, limits, resumed?.sentAs, resumed?.after);
  }

  private async append(
    prepared: Prepared,
    expected: number | undefined,
    limits: AppendLimits,
    sentAs?: string,
    sentAfter?: number,
    taken = 0, // message ids found taken by another writer's entries so far (taken-id.ts)
  ): Promise<LogEntry> {
    const messageId = sentAs ?? `${this.clientId}-${this.instanceId}-${++this.counter}`;
    // An unconditional entry lands after the log's tail, which is at or after this revision.
    const after = expected ?? sentAfter ?? this.history.revision;
    this.own.remember(messageId, prepared);
    let lost: StateSyncError | undefined; // not stored under `messageId`, nor ever will be
    try {
      let revision: number;
      try {
        const ack = { fresh: false, sent: sentAs !== undefined };
        revision = await this.exactlyOnce(prepared.data, expected, after, messageId, limits, ack);
        // Named by its id alone (a duplicate, a look-up): ours only with our bytes.
        const by = ack.fresh ? false : await heldByAnother(this.log, revision, prepared.data);
        if (by) throw (lost = idTaken(messageId, revision, expected, taken, by));
      } finally {
        limits.contend?.done(); // (not promise.finally: two promises more per append)
      }
      this.stats.appends += 1;
      this.status.wrote(); // writability (status.ts, invariant 5)
      return { revision, data: prepared.data, messageId };
    } catch (e) {
      this.own.forget(messageId);
      if (lost && expected === undefined && taken < MAX_TAKEN_IDS) {
        return this.append(prepared, undefined, limits, undefined, after, taken + 1);
      }
      // The log's limit shrank since it was learnt (a stream edited under the replica): learnt
      // again before the next entry is prepared (else every later compaction failed alike).
      if (isStateSyncError(e, "PAYLOAD_TOO_LARGE")) this.maxBytes = undefined;
      this.status.writeFailed(e);
      throw e;
    }
  }

  private async exactlyOnce(
    data: Uint8Array,
    expected: number | undefined,
    after: number,
    messageId: string,
    { timeoutMs, signal, deadline: until, contend }: AppendLimits,
    ack: { fresh: boolean; readonly sent: boolean },
  ): Promise<number> {
    // The update's wait started before this append when it waited for the log or other writers.
    const started = Math.min(Date.now(), (until ?? Infinity) - timeoutMs);
    const deadline = Math.min(Date.now() + timeoutMs, until ?? Infinity);
    let maybeStored = ack.sent; // false while every attempt is known not to have been sent
    let condition = expected; // the revision the next send is conditional on
    let checked = after; // unconditional: the first send may lie after this revision
    let sends = 0;
    let conflicts = 0; // an unconditional append's re-sends that conflicted
    let elsewhere: number | undefined; // stored at a revision this log cannot give it
    for (let attempt = 0; ; attempt++) {
      try {
        if (maybeStored && expected === undefined) {
          if (conflicts > 0 && contend) await this.contending(contend, conflicts, deadline, signal);
          // Invariant 2: look before re-sending, and re-send only on the tail that was checked.
          const seen = await lookupBounded(
            this.lookup.locate(messageId, checked, "range"),
            deadline,
            signal,
          );
          if (seen.kind === "found") return seen.revision;
          if (seen.kind === "absent") condition = checked = seen.tail;
          else if (seen.purged) throw unknownBecause(seen.why, messageId);
          else condition = undefined; // too much to read: the server's duplicate table decides
        }
        await this.untilChecked(expected, deadline, signal);
        // The caller's limits bound the attempt in flight too (issue 10, case 6).
        sends += 1;
        const limit = { timeoutMs: Math.max(1, deadline - Date.now()), signal };
        if (condition !== undefined && expected === undefined) this.stats.attempts += 1;
        const result =
          condition === undefined
            ? await this.log.appendUnconditional(data, messageId, limit)
            : await this.log.appendConditional(data, condition, messageId, limit);
        // A new entry lands after the tail, at or after `after`: an ack at or before it came from
        // another log (a stream created again, a log that went back; a re-send on a tail looked
        // up there too). A duplicate is the first send, perhaps read back already.
        if (expected === undefined && !result.duplicate && result.revision <= after) {
          elsewhere = result.revision;
        } else return ((ack.fresh = !result.duplicate), result.revision);
      } catch (e) {
        let failure: unknown = e;
        if (isStateSyncError(e, "CONFLICT") && maybeStored && expected !== undefined) {
          try {
            const seen = await lookupBounded(
              this.lookup.locate(messageId, expected, "next"),
              deadline,
              signal,
            );
            if (seen.kind === "found") return seen.revision;
            if (seen.kind === "absent") throw e; // a real conflict: the caller may re-run
            throw unknownBecause(seen.why, messageId);
          } catch (lookup) {
            if (lookup === e || !isStateSyncError(lookup, "UNAVAILABLE")) {
              throw lookup === e || !maybeStored ? lookup : outcomeUnknown(lookup, messageId);
            }
            failure = lookup;
          }
        } else if (isStateSyncError(e, "CONFLICT") && maybeStored) {
          conflicts += 1; // the tail moved since it was checked (perhaps by the first send)
          this.stats.conflicts += 1; // (a trial saw only `resends` move)
        } else if (!isStateSyncError(e, "UNAVAILABLE")) {
          // After an attempt whose outcome is unknown, a re-send that fails for another reason
          // (denied, stream gone, ...) says nothing about that first attempt. A connection
          // closed under this attempt (not `notSent`) leaves this one unknown too: only a
          // `CONNECTION_CLOSED` that sent nothing tells the caller that nothing was appended.
          const closedUnder = isStateSyncError(e, "CONNECTION_CLOSED") && !e.details.notSent;
          this.status.fatal(e); // a closed connection stops the replica, whoever meets it
          throw maybeStored || closedUnder ? outcomeUnknown(e, messageId) : e;
        }
        if (!(isStateSyncError(failure) && failure.details.notSent === true)) maybeStored = true;
        const over = Date.now() >= deadline || this.status.closed || signal?.aborted === true;
        if (over && !maybeStored) {
          // Nothing was ever sent: the outcome is known, the caller may simply try again.
          if (signal?.aborted && !this.status.closed) throw abortError(signal);
          const timedOut = Date.now() >= deadline ? timeoutMs : undefined;
          throw unreachableFor(failure, Date.now() - started, sends, timedOut);
        }
        if (over) {
          const why =
            signal?.aborted && !this.status.closed
              ? "aborted while its outcome was unknown"
              : this.status.closed
                ? "the synchronizer closed while its outcome was unknown"
                : endedWhy(timeoutMs, sends - 1, conflicts, failure);
          throw new StateSyncError(
            "UNKNOWN_OUTCOME",
            `the append may or may not be stored: ${why}`,
            {
              cause: failure,
              details: { messageId },
            },
          );
        }
        this.stats.resends += 1; // counted when decided (before the wait)
        if (isStateSyncError(failure, "CONFLICT")) continue; // looked up again at once
        // The signal ends the wait at once: then nothing more is sent, and the outcome is what
        // the attempts so far leave it (ABORTED when none was sent, else UNKNOWN_OUTCOME).
        const wait = Math.min(deadline - Date.now(), 50 * 2 ** Math.min(attempt, 6));
        await sleep(wait, signal).catch(() => undefined);
        if (signal?.aborted && !this.status.closed) {
          if (!maybeStored) throw abortError(signal);
          throw new StateSyncError(
            "UNKNOWN_OUTCOME",
            "the append may or may not be stored: aborted while its outcome was unknown",
            { cause: failure, details: { messageId } },
          );
        }
      }
      if (elsewhere !== undefined) throw storedElsewhere(this.status, elsewhere, after, messageId);
    }
  }

  /**
   * The writer's turn before a re-send after `conflicts` lost races so far: other writers kept
   * appending between its look-up and its re-send (a trial, stop 28: about 40 appends a second in
   * one process made every such update fail `UNKNOWN_OUTCOME`, none stored). Like a conditional
   * writer, it announces itself with an intent after three, and others then hold back.
   */
  private async contending(
    contend: Contender,
    conflicts: number,
    deadline: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const limits = waitLimits([{ signal, deadline, outcomeTimeoutMs: 0 }], this.status.signal);
    await contend
      .before(conflicts, limits)
      .catch(() => undefined)
      .finally(() => limits.dispose());
  }

  /**
   * Waits, sending nothing, while the log has not said since the connection was lost whether it
   * still holds what the replica applied (opener invariant 7). Until then `expected` is
   * unchecked: a rewound log may be at that revision again with other entries, and would accept
   * the append on a base it no longer holds (a test found it did; nats.js also sends a request
   * made while disconnected as soon as it reconnects, before the check). An unconditional append
   * waits too, and a stalled replica sends nothing at all: a command re-sent after its replica
   * stalled on a log that went back landed on that log, and its caller's promise resolved
   * (fresh-eyes trial, stop 25). Throws the stall (a log that went back), `CLOSED`, `ABORTED`,
   * or `UNAVAILABLE` (`notSent`) at `deadline`.
   */
  private async untilChecked(expected: number | undefined, deadline: number, signal?: AbortSignal) {
    if (this.status.stopped && !this.status.closed) throw this.status.endError();
    const held = this.held();
    if (held === undefined) return;
    const ended = await within(held, { deadline, signal: signal ?? this.status.signal });
    if (this.status.stopped) throw this.status.endError();
    if (ended !== ENDED) return;
    if (signal?.aborted) throw abortError(signal);
    const what =
      expected === undefined
        ? "what this replica applied"
        : `revision ${expected}, which this append is conditional on`;
    throw new StateSyncError(
      "UNAVAILABLE",
      `the connection was lost, and the log has not said since whether it still holds ${what}: nothing is sent until it does`,
      { details: { notSent: true } },
    );
  }

  private async maxEntryBytes(): Promise<number> {
    if (this.maxBytes === undefined) {
      try {
        this.learn(await this.log.info());
      } catch {
        return Infinity; // unknown while offline; the log checks again before sending
      }
    }
    return this.maxBytes!;
  }
}
