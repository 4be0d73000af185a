/**
 * The read half of a `JetStreamLog`: its bounds and identity (`info`), range reads, point reads
 * and the search for a message id.
 *
 * Responsibilities: answer where this state's entries start and end in either layout (own
 * stream: the stream state; shared stream: the first and last message on the subject), read a
 * range through {@link readRange} without ever pulling on an empty range, read single entries
 * through the {@link PointReader}, and find a message id among the entries after a revision.
 *
 * Invariants:
 * 1. A range read first learns the range's bounds and clamps to them, so it never starts a pull
 *    that can only end by expiring (an empty range, or one past the last revision).
 * 2. Revisions are stream sequences in both layouts; in the shared layout a point read by
 *    sequence answers only messages of this state's subject.
 * 3. Message ids are read back through the layout's {@link MessageIdCodec}, so a shared stream's
 *    `<subject>:` prefix never reaches the caller.
 * 4. A revision of an own stream that holds no message, which no purge or deletion explains, is
 *    read as a `LogEntry.skipped` entry: nats-server 2.9 used up a stream sequence for a publish
 *    its resource limits refused (found by a trial: a replica stalled `TRUNCATED` for good after
 *    one refused append, and so did every new one; fixed in 2.10: nats-server #7658 is its R1
 *    counterpart). Only in a stream that can have no other such gap ({@link holesPossible}).
 * 5. A read to the log's end (`toRevision` = `Infinity`) that a truncation overtook still ends
 *    with the first entry retained after what it lost (`RevisionedLog.read`): its bounds were
 *    taken before a compaction appended its snapshot entry past them and purged everything
 *    before it, so the range it pulled on held nothing any more. Its last entry is then the
 *    first one at or after the revision it stopped short of, by one point read (atomic on the
 *    server, so no compaction can overtake it). Before, such a read came back empty, and a
 *    replica opening beside replicas that compacted in tight loops stalled `TRUNCATED` after
 *    four of them in a row (a new user's trial: 4 of 123 openings; the CLI's `state` and
 *    `compact` alike, and its first-entry check called the snapshot entry "malformed").
 */
import { sleep } from "../backoff.js";
import { StateSyncError } from "../errors.js";
import type { LogEntry, LogInfo } from "../log.js";
import type { ConnectionGate } from "./connection-gate.js";
import type { JetStreamLayout } from "./layout.js";
import type { PointMessage, PointReader } from "./point-reads.js";
import { readRange, type RangeSource } from "./range-reader.js";
import type { StreamOpener, StreamSession } from "./stream-session.js";
import { checkRevision, MSG_ID_HEADER, skippedEntry, type MessageIdCodec } from "./util.js";
import type { StreamInfoLike } from "./nats-types.js";

/** What a {@link LogReader} needs from its log. */
export interface LogReaderOptions {
  readonly opener: StreamOpener;
  readonly gate: ConnectionGate;
  readonly layout: JetStreamLayout;
  readonly points: PointReader;
  readonly ids: MessageIdCodec;
  /** Timeout of each request, ms. */
  readonly timeoutMs: number;
}

/** Reads of one state's entries (see the module header). */
export class LogReader {
  private readonly stream: string;
  private readonly subject: string;
  private readonly shared: boolean;

  constructor(private readonly o: LogReaderOptions) {
    this.stream = o.layout.stream;
    this.subject = o.layout.subject;
    this.shared = o.layout.shared;
  }

  /**
   * Identity `jetstream:<stream>:<subject>@<created>`; own layout: first/latest from the stream
   * state (`first_seq`, or 0 when it holds no message; `last_seq`, which a purge keeps); shared:
   * the first (`next_by_subj`) and last (`last_by_subj`) message on the subject, 0 when none.
   */
  async info(): Promise<LogInfo> {
    const s = await this.o.opener.ready();
    try {
      if (!this.shared) {
        const si = await this.o.opener.streamInfo(s);
        return {
          identity: await this.identity(s, si.created),
          firstRevision: si.state.messages === 0 ? 0 : si.state.first_seq,
          latestRevision: si.state.last_seq,
          maxEntryBytes: this.o.opener.maxEntryBytes(s),
          truncationDenied: si.config.deny_purge === true,
        };
      }
      const [si, last, first] = await Promise.all([
        this.o.opener.streamInfo(s),
        this.o.points.last(s),
        this.o.points.next(s, 0),
      ]);
      const latestRevision = last?.seq ?? 0;
      return {
        identity: await this.identity(s, si.created),
        firstRevision: latestRevision === 0 ? 0 : (first?.seq ?? latestRevision),
        latestRevision,
        logPosition: si.state.last_seq,
        maxEntryBytes: this.o.opener.maxEntryBytes(s),
        truncationDenied: si.config.deny_purge === true,
      };
    } catch (err) {
      throw this.o.opener.failure(err, "info");
    }
  }

  /**
   * The entries with `fromRevision <= revision <= toRevision`, in order (invariant 1); to the
   * log's end with `toRevision` = `Infinity`, overtaken or not (invariant 5).
   */
  async *read(fromRevision: number, toRevision: number): AsyncIterable<LogEntry> {
    checkRevision(fromRevision, "fromRevision");
    if (Number.isNaN(toRevision)) throw new StateSyncError("VALIDATION", "toRevision is NaN");
    const s = await this.o.opener.ready();
    let start = Math.max(1, Math.ceil(fromRevision));
    if (start > toRevision) return;
    let bounds: { first: number; last: number; holes: boolean };
    try {
      bounds = await this.bounds(s, start);
    } catch (err) {
      throw this.o.opener.failure(err, "read");
    }
    start = Math.max(start, bounds.first);
    const end = Math.min(Math.floor(toRevision), bounds.last);
    if (bounds.first === 0 || start > end) return;
    let last = start - 1;
    for await (const entry of this.within(s, start, end, bounds.holes)) {
      last = entry.revision;
      yield entry;
    }
    // Ended short of `end`: a truncation removed the rest after the bounds were taken (invariant 5).
    if (toRevision === Number.POSITIVE_INFINITY && last < end) {
      const next = await this.firstAt(s, last + 1);
      if (next !== undefined) yield next;
    }
  }

  /** `read`'s entries in `start..end`, which the log held when the read took its bounds. */
  private async *within(
    s: StreamSession,
    start: number,
    end: number,
    holesPossible: boolean,
  ): AsyncGenerator<LogEntry> {
    // A range that holds no message at all, but used-up sequences (invariant 4), is not pulled
    // on (a pull would wait for its expiry); one that holds a message is read as any other.
    if (holesPossible && !(await this.rangeSource(s).hasMore(start, end))) {
      if (await this.holes(start, end, "read")) {
        for (let r = start; r <= end; r++) yield skippedEntry(r);
      }
      return;
    }
    yield* this.range(s, start, end, Number.POSITIVE_INFINITY, "read");
  }

  /** The first entry of this state at or after `from` (one point read; errors mapped). */
  private async firstAt(s: StreamSession, from: number): Promise<LogEntry | undefined> {
    try {
      const m = await this.o.points.next(s, from);
      return m === undefined ? undefined : this.toEntry(m);
    } catch (err) {
      throw this.o.opener.failure(err, "read");
    }
  }

  /**
   * True when the stream never stored anything at `from..to` (invariant 4): own layout only, a
   * stream that can have no other gap ({@link holesPossible}), whose first message (`next_by_subj`
   * from 1: `first_seq` cannot tell, 2.9.10 may leave it on a purged sequence) lies before `from`,
   * so no purge reached `from..to` (a purge removes a prefix), and nothing in `from..to`.
   * (`last_by_subj` is not used: 2.9.10 answers "no message found" after a refused publish.)
   * Errors mapped.
   */
  async holes(from: number, to: number, what: string): Promise<boolean> {
    if (this.shared || from < 2) return false;
    const s = await this.o.opener.ready();
    try {
      if (!this.holesPossible(await this.o.opener.streamInfo(s))) return false;
      const [first, m] = await Promise.all([this.o.points.next(s, 1), this.o.points.next(s, from)]);
      return first !== undefined && first.seq < from && (m === undefined || m.seq > to);
    } catch (err) {
      throw this.o.opener.failure(err, what);
    }
  }

  /**
   * Whether a sequence between the first and last of this own stream that holds no message can
   * only be one the server used up without storing (invariant 4): the stream says it has such
   * sequences, denies deletes, has no per-message TTL (2.11), holds only this subject (no
   * filtered purge of another) and one replica (the server bug is of R1 streams).
   */
  private holesPossible(si: StreamInfoLike): boolean {
    const c = si.config;
    return (
      !this.shared &&
      (si.state.num_deleted ?? 0) > 0 &&
      si.state.messages > 0 &&
      c.deny_delete === true &&
      c.allow_msg_ttl !== true &&
      (c.num_replicas ?? 1) === 1 &&
      c.subjects?.length === 1 &&
      c.subjects[0] === this.subject
    );
  }

  /**
   * {@link readRange}, its errors mapped by the opener like every other call's: a stream deleted
   * once it was opened is `LOG_REPLACED` here too, not the `TRUNCATED` the server's "stream not
   * found" maps to (issue 10, case 3).
   */
  private async *range(
    s: StreamSession,
    from: number,
    to: number,
    limit: number,
    what: string,
  ): AsyncGenerator<LogEntry> {
    try {
      yield* readRange(this.rangeSource(s), from, to, limit);
    } catch (err) {
      throw this.o.opener.failure(err, what);
    }
  }

  /** A point read by sequence; undefined when absent or on another subject. */
  async entryAt(revision: number): Promise<LogEntry | undefined> {
    checkRevision(revision, "revision");
    const s = await this.o.opener.ready();
    if (!Number.isInteger(revision) || revision < 1) return undefined;
    try {
      const m = await this.o.points.at(s, revision);
      return m === undefined ? undefined : this.toEntry(m);
    } catch (err) {
      throw this.o.opener.failure(err, "entryAt");
    }
  }

  /** See `RevisionedLog.otherStateAt` (errors mapped). */
  async otherStateAt(revision: number): Promise<boolean> {
    checkRevision(revision, "revision");
    const s = await this.o.opener.ready();
    if (!Number.isInteger(revision) || revision < 1) return false;
    try {
      return await this.o.points.otherAt(s, revision);
    } catch (err) {
      throw this.o.opener.failure(err, "otherStateAt");
    }
  }

  /** Whether the stream holds an entry of this state at exactly `seq` (errors mapped). */
  async entryExists(seq: number, what: string): Promise<boolean> {
    const s = await this.o.opener.ready();
    try {
      return (await this.o.points.at(s, seq)) !== undefined;
    } catch (err) {
      throw this.o.opener.failure(err, what);
    }
  }

  /** The latest revision of this state (errors mapped), as {@link LogInfo.latestRevision}. */
  async latestRevision(what: string): Promise<number> {
    const s = await this.o.opener.ready();
    try {
      return await this.latest(s);
    } catch (err) {
      throw this.o.opener.failure(err, what);
    }
  }

  /** The stream's creation time now (errors mapped; `TRUNCATED` when it no longer exists). */
  async streamCreated(what: string): Promise<string> {
    const s = await this.o.opener.ready();
    try {
      return (await this.o.opener.streamInfo(s)).created;
    } catch (err) {
      throw this.o.opener.failure(err, what);
    }
  }

  /**
   * Compares `Nats-Msg-Id` of the first `scan` entries of this state after `afterRevision`
   * (jetstream-notes "Lost acknowledgements"). `scan` 1 is one `next_by_subj` point read.
   */
  async findByMessageId(
    messageId: string,
    afterRevision: number,
    scan = 1,
  ): Promise<number | undefined> {
    checkRevision(afterRevision, "afterRevision");
    if (!Number.isSafeInteger(scan) || scan < 1) {
      throw new StateSyncError("VALIDATION", "scan must be a positive integer");
    }
    const s = await this.o.opener.ready();
    const from = Math.max(1, Math.floor(afterRevision) + 1);
    if (scan === 1) {
      let m: PointMessage | undefined;
      try {
        m = await this.o.points.next(s, from);
      } catch (err) {
        throw this.o.opener.failure(err, "findByMessageId");
      }
      return m !== undefined && this.toEntry(m).messageId === messageId ? m.seq : undefined;
    }
    let last: number;
    try {
      last = await this.latest(s);
    } catch (err) {
      throw this.o.opener.failure(err, "findByMessageId");
    }
    const end = this.shared ? last : Math.min(last, from + scan - 1);
    for await (const e of this.range(s, from, end, scan, "findByMessageId")) {
      if (e.messageId === messageId) return e.revision;
    }
    return undefined;
  }

  /**
   * `jetstream:<stream>:<subject>@<created>`, the stream's creation time as first opened. While
   * the server reports none (Go's zero time, right after a restart while it recovers the stream:
   * seen in CI) and this log never learned it, stream info is asked again, every 200 ms for at
   * most 2 s: an identity of the zero time would read as another log to a local snapshot and
   * to queued updates (docs/offline.md, "One log"). After that the zero time stands.
   */
  private async identity(s: StreamSession, reported: string): Promise<string> {
    let created = this.o.opener.identityCreated(reported);
    for (let i = 0; created === undefined && i < 10; i++) {
      await sleep(200);
      created = this.o.opener.identityCreated((await this.o.opener.streamInfo(s)).created);
    }
    return `jetstream:${this.stream}:${this.subject}@${created ?? reported}`;
  }

  /** Latest revision of this state (own: the stream's `last_seq`; shared: `last_by_subj`). */
  private async latest(s: StreamSession): Promise<number> {
    if (this.shared) return (await this.o.points.last(s))?.seq ?? 0;
    return (await this.o.opener.streamInfo(s)).state.last_seq;
  }

  /**
   * The first revision >= `from` that holds an entry of this state (0: none) and the latest
   * revision, so that a read never pulls on an empty range (a pull would wait for its expiry).
   */
  private async bounds(
    s: StreamSession,
    from: number,
  ): Promise<{ first: number; last: number; holes: boolean }> {
    if (this.shared) {
      const [first, last] = await Promise.all([this.o.points.next(s, from), this.o.points.last(s)]);
      return { first: first?.seq ?? 0, last: last?.seq ?? 0, holes: false };
    }
    const si = await this.o.opener.streamInfo(s);
    const { messages, first_seq, last_seq } = si.state;
    return {
      first: messages === 0 || from > last_seq ? 0 : Math.max(from, first_seq),
      last: last_seq,
      holes: this.holesPossible(si),
    };
  }

  private toEntry(m: PointMessage): LogEntry {
    return {
      revision: m.seq,
      data: m.data,
      messageId: this.o.ids.decode(m.headers?.get(MSG_ID_HEADER) ?? ""),
    };
  }

  private rangeSource(s: StreamSession): RangeSource {
    return {
      api: s.api,
      gate: this.o.gate,
      stream: this.stream,
      subject: this.subject,
      contiguous: !this.shared,
      timeoutMs: this.o.timeoutMs,
      ids: this.o.ids,
      hasMore: async (from, to) => {
        const m = await this.o.points.next(s, from);
        return m !== undefined && m.seq <= to;
      },
      holes: (from, to) => this.holes(from, to, "read"),
    };
  }
}
