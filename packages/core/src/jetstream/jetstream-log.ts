import { z } from "zod/v4";
import { StateSyncError } from "../errors.js";
import type {
  AppendResult,
  LogConnectionStatus,
  LogEntry,
  LogFollowHandler,
  LogFollower,
  LogInfo,
  RevisionedLog,
} from "../log.js";
import { ConnectionGate } from "./connection-gate.js";
import { JetStreamFollower } from "./follower.js";
import { resolveLayout, type JetStreamLayout } from "./layout.js";
import { toStateSyncError } from "./nats-errors.js";
import type {
  JetStreamClientLike,
  JetStreamManagerLike,
  NatsConnectionLike,
  StreamInfoLike,
} from "./nats-types.js";
import { PointReader, type PointMessage, type PointReadMode } from "./point-reads.js";
import { readRange, type RangeSource } from "./range-reader.js";
import { assertSharedLayoutSupported } from "./server-version.js";
import { assertStreamConfig, ensureStream } from "./stream-config.js";
import { MSG_ID_HEADER, messageIdCodec, type MessageIdCodec } from "./util.js";

/** Options of {@link JetStreamLog}. */
export interface JetStreamLogOptions {
  /**
   * A nats.js v2 connection (`nats` over TCP or `nats.ws`), or a promise of one while the server
   * is not reachable yet: the log is `offline` until it resolves and each call waits for it at
   * most `requestTimeoutMs`. The log never closes it.
   */
  connection: NatsConnectionLike | Promise<NatsConnectionLike>;
  /** JetStream stream name (1-255 characters; no whitespace, `.`, `*`, `>`, `/`, `\`). */
  stream: string;
  /**
   * Selects the shared layout: many states in `stream`, this one on subject `<prefix>.<key>`.
   * One or more dot-separated tokens of `[A-Za-z0-9_-]`. Without it the state owns the stream.
   */
  key?: string;
  /** First subject tokens; default the stream name. Own layout: `<prefix>.log`. */
  subjectPrefix?: string;
  /** Create the stream when it does not exist (default true); false: it must exist. */
  create?: boolean;
  /** Replicas of a stream this log creates (1-5, default 1). */
  replicas?: number;
  /** Timeout of each JetStream request and of the wait for a pending connection, ms (default 5000). */
  requestTimeoutMs?: number;
  /**
   * How single entries are read (the latest, the first at or after a revision, one by revision):
   * `"direct"` with `STREAM.MSG.GET`, `"consumer"` through an ephemeral consumer filtered to this
   * state's subject, or `"auto"` (default): direct until the server denies `STREAM.MSG.GET`, then
   * consumers. A tenant of a shared stream must be denied `STREAM.MSG.GET` (it reads any subject);
   * see docs/permissions.md.
   */
  pointReads?: PointReadMode;
}

/** Room left in `max_payload` for the headers of a publish (message id, expected sequence). */
export const HEADER_ALLOWANCE_BYTES = 1024;
/** Longest message id accepted, in UTF-8 bytes. */
export const MAX_MESSAGE_ID_BYTES = 256;

const optionsSchema = z.object({
  connection: z.custom<NatsConnectionLike | Promise<NatsConnectionLike>>(
    (v) => typeof v === "object" && v !== null,
    "connection must be a nats.js connection or a promise of one",
  ),
  stream: z.string(),
  key: z.string().optional(),
  subjectPrefix: z.string().optional(),
  create: z.boolean().optional(),
  replicas: z.number().int().min(1).max(5).optional(),
  requestTimeoutMs: z.number().int().min(1).max(600_000).optional(),
  pointReads: z.enum(["auto", "direct", "consumer"]).optional(),
});

/** What the log learned when it opened the stream on a connection. */
interface Setup {
  readonly nc: NatsConnectionLike;
  readonly js: JetStreamClientLike;
  readonly jsm: JetStreamManagerLike;
  /** Stream creation time as last seen. */
  created: string;
  /** Stream `max_msg_size` as last seen (-1: none). */
  maxMsgSize: number;
  /** Stream `duplicate_window` as last seen, ms. */
  duplicateWindowMs: number;
}

/** The server's default `duplicate_window` (2 minutes), ms. */
const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;

function duplicateWindowMs(si: StreamInfoLike): number {
  const ns = si.config.duplicate_window;
  return typeof ns === "number" && ns > 0 ? ns / 1_000_000 : DEFAULT_DUPLICATE_WINDOW_MS;
}

const encoder = new TextEncoder();

/**
 * A {@link RevisionedLog} on NATS JetStream (jetstream-notes). Two layouts:
 * - **own stream** (no `key`): the state owns stream `stream`, subject `<prefix>.log`;
 *   `contiguous`; conditional appends send `Nats-Expected-Last-Sequence`. Safe on any server.
 * - **shared** (`key`): many states in one stream, subject `<prefix>.<key>`; not contiguous;
 *   conditional appends send `Nats-Expected-Last-Subject-Sequence`. Refused with
 *   `UNSUPPORTED_SERVER` on a clustered server older than 2.9.21.
 *
 * The stream is opened on first use: created when missing (if `create`; see
 * `createdStreamConfig`), and its configuration checked (`STREAM_CONFIG` when it could drop
 * history). Every publish carries `Nats-Msg-Id`, so a re-send within the duplicate window is
 * answered `{ revision, duplicate: true }`; JetStream deduplicates per stream, so in the shared
 * layout the header is `<subject>:<messageId>` (read back without the prefix). An unconditional
 * append is re-sent only while the server surely still remembers its id: later it fails with
 * `UNKNOWN_OUTCOME` (see `checkResend`). Reads use ordered consumers filtered to the one
 * subject; point reads use `STREAM.MSG.GET`, or a consumer filtered to the subject when the
 * server denies that API (option `pointReads`); truncation is a filtered purge (safe from
 * 2.9.10's purge bug, which only moves unfiltered or wider consumers).
 *
 * Errors (all `StateSyncError`): `CONFLICT` ({@link AppendConflictError}), `UNAVAILABLE`
 * (timeout, disconnected, no responders: an append's outcome is unknown), `PERMISSION_DENIED`,
 * `PAYLOAD_TOO_LARGE` (checked before sending), `UNKNOWN_OUTCOME` (an unconditional re-send
 * refused near the duplicate window), `STREAM_CONFIG`, `UNSUPPORTED_SERVER`,
 * `TRUNCATED` (the stream was deleted), `VALIDATION` (options and arguments), `CLOSED`.
 */
export class JetStreamLog implements RevisionedLog {
  readonly contiguous: boolean;
  /** Stream name. */
  readonly stream: string;
  /** Key in the shared layout, else undefined. */
  readonly key: string | undefined;
  /** The subject this state's entries are published on. */
  readonly subject: string;

  private readonly layout: JetStreamLayout;
  private readonly ids: MessageIdCodec;
  private readonly gate: ConnectionGate;
  private readonly create: boolean;
  private readonly replicas: number;
  private readonly timeoutMs: number;
  private readonly points: PointReader;
  private setup: Promise<Setup> | undefined;
  private closed = false;
  private readonly followers = new Set<JetStreamFollower>();
  /** First send time (ms) of unconditional appends not acknowledged yet, by message id. */
  private readonly unacknowledged = new Map<string, number>();

  /** Validates `options` (throws `VALIDATION`); connects lazily. */
  constructor(options: JetStreamLogOptions) {
    const parsed = optionsSchema.safeParse(options);
    if (!parsed.success) {
      throw new StateSyncError(
        "VALIDATION",
        `invalid JetStreamLog options: ${z.prettifyError(parsed.error)}`,
        { cause: parsed.error },
      );
    }
    const o = parsed.data;
    this.layout = resolveLayout(o.stream, o.key, o.subjectPrefix);
    this.stream = this.layout.stream;
    this.key = this.layout.key;
    this.subject = this.layout.subject;
    this.contiguous = !this.layout.shared;
    this.ids = messageIdCodec(this.layout.shared, this.subject);
    this.create = o.create ?? true;
    this.replicas = o.replicas ?? 1;
    this.timeoutMs = o.requestTimeoutMs ?? 5_000;
    this.points = new PointReader(this.stream, this.subject, o.pointReads ?? "auto");
    this.gate = new ConnectionGate(o.connection);
  }

  /**
   * Creates a log and opens its stream (creating and checking it) before resolving. Throws what
   * the first call would: `UNAVAILABLE`, `STREAM_CONFIG`, `UNSUPPORTED_SERVER`, ...
   */
  static async open(options: JetStreamLogOptions): Promise<JetStreamLog> {
    const log = new JetStreamLog(options);
    try {
      await log.ready();
    } catch (err) {
      await log.close();
      throw err;
    }
    return log;
  }

  get status(): LogConnectionStatus {
    return this.gate.status;
  }

  watchStatus(listener: (status: LogConnectionStatus) => void): () => void {
    return this.gate.watchStatus(listener);
  }

  /**
   * Identity `jetstream:<stream>:<subject>@<created>`; own layout: first/latest from the stream
   * state (`first_seq`, or 0 when it holds no message; `last_seq`, which a purge keeps); shared:
   * the first (`next_by_subj`) and last (`last_by_subj`) message on the subject, 0 when none.
   */
  async info(): Promise<LogInfo> {
    const s = await this.ready();
    try {
      if (!this.layout.shared) {
        const si = await s.jsm.streams.info(this.stream);
        this.observe(s, si);
        return {
          identity: this.identity(si.created),
          firstRevision: si.state.messages === 0 ? 0 : si.state.first_seq,
          latestRevision: si.state.last_seq,
          maxEntryBytes: this.maxEntryBytes(s),
        };
      }
      const [si, last, first] = await Promise.all([
        s.jsm.streams.info(this.stream),
        this.lastOnSubject(s),
        this.nextOnSubject(s, 0),
      ]);
      this.observe(s, si);
      const latestRevision = last?.seq ?? 0;
      return {
        identity: this.identity(si.created),
        firstRevision: latestRevision === 0 ? 0 : (first?.seq ?? latestRevision),
        latestRevision,
        maxEntryBytes: this.maxEntryBytes(s),
      };
    } catch (err) {
      throw this.failure(err, "info");
    }
  }

  appendConditional(
    data: Uint8Array,
    expectedRevision: number,
    messageId: string,
  ): Promise<AppendResult> {
    if (!Number.isSafeInteger(expectedRevision) || expectedRevision < 0) {
      return Promise.reject(
        new StateSyncError("VALIDATION", "expectedRevision must be a non-negative integer"),
      );
    }
    return this.append(data, messageId, expectedRevision);
  }

  appendUnconditional(data: Uint8Array, messageId: string): Promise<AppendResult> {
    return this.append(data, messageId, undefined);
  }

  async *read(fromRevision: number, toRevision: number): AsyncIterable<LogEntry> {
    checkRevision(fromRevision, "fromRevision");
    if (Number.isNaN(toRevision)) throw new StateSyncError("VALIDATION", "toRevision is NaN");
    const s = await this.ready();
    let start = Math.max(1, Math.ceil(fromRevision));
    if (start > toRevision) return;
    let bounds: { first: number; last: number };
    try {
      bounds = await this.bounds(s, start);
    } catch (err) {
      throw this.failure(err, "read");
    }
    start = Math.max(start, bounds.first);
    const end = Math.min(Math.floor(toRevision), bounds.last);
    if (bounds.first === 0 || start > end) return;
    yield* readRange(this.rangeSource(s), start, end);
  }

  follow(fromRevision: number, handler: LogFollowHandler): LogFollower {
    this.assertOpen();
    checkRevision(fromRevision, "fromRevision");
    let created: string | undefined;
    const follower = new JetStreamFollower(
      {
        gate: this.gate,
        stream: this.stream,
        subject: this.subject,
        timeoutMs: this.timeoutMs,
        ids: this.ids,
        ready: async () => {
          const s = await this.ready();
          created ??= s.created;
          if (s.created !== created) {
            throw new StateSyncError("TRUNCATED", `stream ${this.stream} was recreated`);
          }
          return { js: s.js, created };
        },
        contiguous: this.contiguous,
        entryExists: async (seq) => {
          const s = await this.ready();
          try {
            return (await this.points.at(s, seq)) !== undefined;
          } catch (err) {
            throw this.failure(err, "follow");
          }
        },
        streamCreated: async () => {
          const s = await this.ready();
          try {
            const si = await s.jsm.streams.info(this.stream);
            this.observe(s, si);
            return si.created;
          } catch (err) {
            throw this.failure(err, "follow");
          }
        },
      },
      Math.max(1, Math.ceil(fromRevision)),
      handler,
    );
    this.followers.add(follower);
    return {
      stop: async () => {
        this.followers.delete(follower);
        await follower.stop();
      },
    };
  }

  /** A point read by sequence; undefined when absent or on another subject. */
  async entryAt(revision: number): Promise<LogEntry | undefined> {
    checkRevision(revision, "revision");
    const s = await this.ready();
    if (!Number.isInteger(revision) || revision < 1) return undefined;
    try {
      const m = await this.points.at(s, revision);
      return m === undefined ? undefined : this.toEntry(m);
    } catch (err) {
      throw this.failure(err, "entryAt");
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
    const s = await this.ready();
    const from = Math.max(1, Math.floor(afterRevision) + 1);
    if (scan === 1) {
      let m: PointMessage | undefined;
      try {
        m = await this.nextOnSubject(s, from);
      } catch (err) {
        throw this.failure(err, "findByMessageId");
      }
      return m !== undefined && this.toEntry(m).messageId === messageId ? m.seq : undefined;
    }
    let last: number;
    try {
      last = await this.latest(s);
    } catch (err) {
      throw this.failure(err, "findByMessageId");
    }
    const end = this.contiguous ? Math.min(last, from + scan - 1) : last;
    for await (const e of readRange(this.rangeSource(s), from, end, scan)) {
      if (e.messageId === messageId) return e.revision;
    }
    return undefined;
  }

  /** Filtered purge: `purge(stream, { filter: subject, seq: revision })`. */
  async truncateBefore(revision: number): Promise<void> {
    checkRevision(revision, "revision");
    const s = await this.ready();
    const seq = Math.floor(revision);
    if (seq <= 1) return;
    try {
      await s.jsm.streams.purge(this.stream, { filter: this.subject, seq });
    } catch (err) {
      throw this.failure(err, "truncateBefore");
    }
  }

  /** Stops every follower and stops watching the connection; never closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const followers = [...this.followers];
    this.followers.clear();
    await Promise.all(followers.map((f) => f.stop()));
    this.gate.close();
  }

  // ---- internals ----

  private assertOpen(): void {
    if (this.closed) throw new StateSyncError("CLOSED", "the JetStreamLog is closed");
  }

  /** The connection, JetStream client and manager, with the stream opened and checked. */
  private async ready(): Promise<Setup> {
    this.assertOpen();
    const nc = await this.gate.get(this.timeoutMs);
    this.assertOpen();
    if (this.layout.shared) assertSharedLayoutSupported(nc.info);
    if (!this.setup) {
      const setup = this.openStream(nc);
      this.setup = setup;
      setup.catch(() => {
        if (this.setup === setup) this.setup = undefined;
      });
    }
    return this.setup;
  }

  private async openStream(nc: NatsConnectionLike): Promise<Setup> {
    let jsm: JetStreamManagerLike;
    try {
      jsm = await nc.jetstreamManager({ checkAPI: false, timeout: this.timeoutMs });
    } catch (err) {
      throw toStateSyncError(err, "open the JetStream manager");
    }
    const js = nc.jetstream({ timeout: this.timeoutMs });
    const si = await ensureStream(jsm, this.layout, this.create, this.replicas);
    return {
      nc,
      js,
      jsm,
      created: si.created,
      maxMsgSize: si.config.max_msg_size ?? -1,
      duplicateWindowMs: duplicateWindowMs(si),
    };
  }

  /** Records what a fresh stream info says and re-checks the configuration. */
  private observe(s: Setup, si: StreamInfoLike): void {
    assertStreamConfig(si, this.layout);
    s.created = si.created;
    s.maxMsgSize = si.config.max_msg_size ?? -1;
    s.duplicateWindowMs = duplicateWindowMs(si);
  }

  /** Maps an error; forgets the opened stream when it is gone or unsafe, to re-open it next time. */
  private failure(err: unknown, what: string, expectedRevision?: number): StateSyncError {
    const error = toStateSyncError(err, `${what} ${this.subject}`, expectedRevision);
    if (error.code === "TRUNCATED" || error.code === "STREAM_CONFIG") this.setup = undefined;
    return error;
  }

  private identity(created: string): string {
    return `jetstream:${this.stream}:${this.subject}@${created}`;
  }

  private maxEntryBytes(s: Setup): number {
    const payload = s.nc.info?.max_payload ?? 1024 * 1024;
    const limit = s.maxMsgSize > 0 ? Math.min(payload, s.maxMsgSize) : payload;
    return Math.max(0, limit - HEADER_ALLOWANCE_BYTES);
  }

  private async append(
    data: Uint8Array,
    messageId: string,
    expected: number | undefined,
  ): Promise<AppendResult> {
    if (!(data instanceof Uint8Array)) {
      throw new StateSyncError("VALIDATION", "data must be a Uint8Array");
    }
    checkMessageId(messageId);
    const s = await this.ready();
    const max = this.maxEntryBytes(s);
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
        : this.contiguous
          ? { lastSequence: expected }
          : { lastSubjectSequence: expected };
    try {
      const ack = await s.js.publish(this.subject, data, {
        msgID: this.ids.encode(messageId),
        timeout: this.timeoutMs,
        ...(expect ? { expect } : {}),
      });
      this.unacknowledged.delete(messageId);
      return { revision: ack.seq, duplicate: ack.duplicate };
    } catch (err) {
      throw this.failure(err, "append", expected);
    }
  }

  /**
   * Refuses to re-send an unconditional append once the server may have forgotten its message id
   * (jetstream-notes "Lost acknowledgements": past `duplicate_window` a re-send is stored again,
   * and nothing else would stop it; a conditional re-send is safe, its expected sequence fails).
   * A re-send must be answered well inside the window: before `first send + window - request
   * timeout - max(1 s, window / 10)`. Later it throws `UNKNOWN_OUTCOME` without sending.
   */
  private checkResend(messageId: string, s: Setup): void {
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
    const safeUntil = first + window - this.timeoutMs - Math.max(1_000, window / 10);
    if (now < safeUntil) return;
    throw new StateSyncError(
      "UNKNOWN_OUTCOME",
      `append ${this.subject}: not re-sending message ${messageId}: the stream's duplicate window ` +
        `(${window} ms) may expire before the server answers, and a re-send could be stored twice`,
      { details: { messageId, duplicateWindowMs: window, firstSentAt: first } },
    );
  }

  /** Latest revision of this state (own: the stream's `last_seq`; shared: `last_by_subj`). */
  private async latest(s: Setup): Promise<number> {
    if (this.layout.shared) return (await this.lastOnSubject(s))?.seq ?? 0;
    const si = await s.jsm.streams.info(this.stream);
    this.observe(s, si);
    return si.state.last_seq;
  }

  /**
   * The first revision >= `from` that holds an entry of this state (0: none) and the latest
   * revision, so that a read never pulls on an empty range (a pull would wait for its expiry).
   */
  private async bounds(s: Setup, from: number): Promise<{ first: number; last: number }> {
    if (this.layout.shared) {
      const [first, last] = await Promise.all([this.nextOnSubject(s, from), this.lastOnSubject(s)]);
      return { first: first?.seq ?? 0, last: last?.seq ?? 0 };
    }
    const si = await s.jsm.streams.info(this.stream);
    this.observe(s, si);
    const { messages, first_seq, last_seq } = si.state;
    return {
      first: messages === 0 || from > last_seq ? 0 : Math.max(from, first_seq),
      last: last_seq,
    };
  }

  /** The last message on the subject (`last_by_subj`, or a consumer: see `pointReads`). */
  private lastOnSubject(s: Setup): Promise<PointMessage | undefined> {
    return this.points.last(s);
  }

  /** The first message on the subject with a sequence >= `from` (`next_by_subj`, server 2.9+). */
  private nextOnSubject(s: Setup, from: number): Promise<PointMessage | undefined> {
    return this.points.next(s, from);
  }

  private toEntry(m: PointMessage): LogEntry {
    return {
      revision: m.seq,
      data: m.data,
      messageId: this.ids.decode(m.headers?.get(MSG_ID_HEADER) ?? ""),
    };
  }

  private rangeSource(s: Setup): RangeSource {
    return {
      js: s.js,
      gate: this.gate,
      stream: this.stream,
      subject: this.subject,
      contiguous: this.contiguous,
      timeoutMs: this.timeoutMs,
      ids: this.ids,
      hasMore: async (from, to) => {
        const m = await this.nextOnSubject(s, from);
        return m !== undefined && m.seq <= to;
      },
    };
  }
}

function checkRevision(value: number, name: string): void {
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new StateSyncError("VALIDATION", `${name} must be a number`);
  }
}

function checkMessageId(id: string): void {
  if (typeof id !== "string" || id.length === 0) {
    throw new StateSyncError("VALIDATION", "messageId must be a non-empty string");
  }
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(id) || encoder.encode(id).length > MAX_MESSAGE_ID_BYTES) {
    throw new StateSyncError(
      "VALIDATION",
      `messageId must be at most ${MAX_MESSAGE_ID_BYTES} bytes without control characters`,
    );
  }
}
