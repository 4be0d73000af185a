/**
 * `JetStreamLog`: the {@link RevisionedLog} port on NATS JetStream, wired from its parts.
 *
 * Parts (one file each): {@link JetStreamAdapter} (the seam to either nats.js client line),
 * {@link ConnectionGate} (the connection, maybe still pending, and its status),
 * {@link StreamOpener} (opening and checking the stream per connection),
 * {@link JetStreamAppender} (appends with exactly-once message ids and the re-send window),
 * {@link LogReader} (bounds, range and point reads, message-id search), {@link LiveFollower}
 * (the live tail: one consumer, or fan-out) and `truncateBefore` (a filtered purge, here). This
 * class validates options, builds the parts and forwards to them; it owns only the set of running followers and the
 * closed flag.
 *
 * Invariants: after `close()` every call throws `CLOSED` (the opener checks it before and after
 * waiting for the connection) and no follower delivers again; the connection is never closed.
 */
import { z } from "zod/v4";
import { StateSyncError } from "../errors.js";
import type {
  AppendOptions,
  AppendResult,
  LogConfigWatcher,
  LogConnectionStatus,
  LogEntry,
  LogFollowHandler,
  LogFollower,
  LogInfo,
  LogStatusListener,
  RevisionedLog,
} from "../log.js";
import { adaptedConnection } from "./adapter.js";
import { JetStreamAppender } from "./appender.js";
import { watchStreamUpdates } from "./config-advisory.js";
import { ConnectionGate } from "./connection-gate.js";
import { LiveFollower, type LiveVia } from "./live-follower.js";
import { layoutIdentityPrefix, resolveLayout, type JetStreamLayout } from "./layout.js";
import { LogReader } from "./log-reader.js";
import { PointReader } from "./point-reads.js";
import { boundedRead } from "./fanout-gaps.js";
import { fanoutOptions, type FanoutOptions } from "./fanout-options.js";
import { jetStreamLogOptionsSchema, type JetStreamLogOptions } from "./jetstream-log-options.js";
import { StreamOpener } from "./stream-session.js";
import { checkRevision, messageIdCodec, type MessageIdCodec } from "./util.js";

export { HEADER_ALLOWANCE_BYTES } from "./stream-session.js";
export { MAX_MESSAGE_ID_BYTES } from "./appender.js";
export type { FanoutOptions } from "./fanout-options.js";
export type { JetStreamLogOptions } from "./jetstream-log-options.js";

/**
 * A {@link RevisionedLog} on NATS JetStream (jetstream-notes). Two layouts:
 * - **own stream** (no `key`): the state owns stream `stream`, subject `<prefix>.log`;
 *   `contiguous`; conditional appends send `Nats-Expected-Last-Sequence`. Safe on any server.
 * - **shared** (`key`): many states in one stream, subject `<prefix>.<key>`; not contiguous;
 *   conditional appends send `Nats-Expected-Last-Subject-Sequence`. Refused with
 *   `UNSUPPORTED_SERVER` on a clustered server older than 2.9.21.
 *
 * Client lines: a connection of nats.js v2 (`nats`, `nats.ws`) as it is, or of v3
 * (`@nats-io/transport-node`, `@nats-io/nats-core`'s `wsconnect`) with `jetstream` (the
 * `@nats-io/jetstream` functions; core never imports a client line), e.g.
 * `new JetStreamLog({ connection: nc, jetstream: await import("@nats-io/jetstream"), stream })`.
 * Both are reached through one {@link JetStreamAdapter}; their errors map to the same codes.
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
 * `TRUNCATED` (the stream was deleted), `VALIDATION` (options and arguments),
 * `CONNECTION_CLOSED` (nats.js closed the connection for good: {@link status} is `closed`),
 * `CLOSED`.
 */
export class JetStreamLog implements RevisionedLog {
  readonly contiguous: boolean;
  /** Stream name. */
  readonly stream: string;
  /** Key in the shared layout, else undefined. */
  readonly key: string | undefined;
  /** The subject this state's entries are published on. */
  readonly subject: string;
  /** `jetstream:<stream>:<subject>`: see `RevisionedLog.identityPrefix`. */
  readonly identityPrefix: string;

  private readonly layout: JetStreamLayout;
  private readonly ids: MessageIdCodec;
  private readonly gate: ConnectionGate;
  private readonly timeoutMs: number;
  private readonly opener: StreamOpener;
  private readonly appender: JetStreamAppender;
  private readonly reader: LogReader;
  private closed = false;
  private readonly followers = new Set<LiveFollower>();
  private readonly fanout: Required<FanoutOptions> | undefined;
  /** Opened with `readOnly`: writes are refused. */
  private readonly readOnly: boolean;
  private readonly configWatches = new Set<() => void>();
  private lastFollower: LiveFollower | undefined;
  private readonly warnings: StateSyncError[] = [];
  private readonly warningListeners = new Set<(warning: StateSyncError) => void>();

  /** Validates `options` (throws `VALIDATION`); connects lazily. */
  constructor(options: JetStreamLogOptions) {
    const parsed = jetStreamLogOptionsSchema.safeParse(options);
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
    this.identityPrefix = layoutIdentityPrefix(this.layout);
    this.contiguous = !this.layout.shared;
    this.ids = messageIdCodec(this.layout.shared, this.subject);
    this.timeoutMs = o.requestTimeoutMs ?? 5_000;
    this.gate = new ConnectionGate(adaptedConnection(o.connection, o.jetstream), o.whyNotConnected);
    this.fanout = fanoutOptions(o.fanout, this.layout);
    this.readOnly = o.readOnly ?? false;
    this.opener = new StreamOpener({
      fanout: this.fanout,
      gate: this.gate,
      layout: this.layout,
      create: o.create ?? true,
      readOnly: o.readOnly ?? false,
      replicas: o.replicas ?? 1,
      timeoutMs: this.timeoutMs,
      domain: o.domain,
      assertOpen: () => this.assertOpen(),
      onRepublishRefused: (e) => this.warn(e),
      onConfigWarning: (e) => this.warn(e),
    });
    this.appender = new JetStreamAppender({
      opener: this.opener,
      subject: this.subject,
      contiguous: this.contiguous,
      ids: this.ids,
      timeoutMs: this.timeoutMs,
    });
    this.reader = new LogReader({
      opener: this.opener,
      gate: this.gate,
      layout: this.layout,
      points: new PointReader(this.stream, this.subject, o.pointReads ?? "auto"),
      ids: this.ids,
      timeoutMs: this.timeoutMs,
    });
  }

  /**
   * Creates a log and opens its stream (creating and checking it) before resolving. Throws what
   * the first call would: `UNAVAILABLE`, `STREAM_CONFIG`, `UNSUPPORTED_SERVER`, ...
   */
  static async open(options: JetStreamLogOptions): Promise<JetStreamLog> {
    const log = new JetStreamLog(options);
    try {
      await log.opener.ready();
    } catch (err) {
      await log.close();
      throw err;
    }
    return log;
  }

  get status(): LogConnectionStatus {
    return this.gate.status;
  }

  /** See {@link RevisionedLog.watchStatus}: `closed` once nats.js closed the connection. */
  watchStatus(listener: LogStatusListener): () => void {
    return this.gate.watchStatus(listener);
  }

  /**
   * Subscribes to the stream-update advisory `$JS.EVENT.ADVISORY.STREAM.UPDATED.<stream>` (see
   * config-advisory.ts): `onChange` on each update of the stream's configuration, `onUnavailable`
   * once when the server denies the subscription (grant it as in docs/permissions.md) or the
   * connection has no core subscriptions. Stopped by the returned function and by `close()`.
   */
  watchConfig(watcher: LogConfigWatcher): () => void {
    this.assertOpen();
    const stop = watchStreamUpdates(this.gate.whenConnected(), this.stream, watcher);
    const remove = () => {
      this.configWatches.delete(remove);
      stop();
    };
    this.configWatches.add(remove);
    return remove;
  }

  /** See {@link LogReader.info}. */
  info(): Promise<LogInfo> {
    return this.reader.info();
  }

  appendConditional(
    data: Uint8Array,
    expectedRevision: number,
    messageId: string,
    options?: AppendOptions,
  ): Promise<AppendResult> {
    if (this.readOnly) return Promise.reject(this.readOnlyError("append"));
    if (!Number.isSafeInteger(expectedRevision) || expectedRevision < 0) {
      return Promise.reject(
        new StateSyncError("VALIDATION", "expectedRevision must be a non-negative integer"),
      );
    }
    return this.appender.append(data, messageId, expectedRevision, options);
  }

  appendUnconditional(
    data: Uint8Array,
    messageId: string,
    options?: AppendOptions,
  ): Promise<AppendResult> {
    if (this.readOnly) return Promise.reject(this.readOnlyError("append"));
    return this.appender.append(data, messageId, undefined, options);
  }

  /** The `STREAM_CONFIG` of a write to a log opened `readOnly` (nothing sent). */
  private readOnlyError(what: string): StateSyncError {
    return new StateSyncError(
      "STREAM_CONFIG",
      `${what} ${this.subject}: the log was opened read-only (readOnly: true)`,
      { details: { stream: this.stream } },
    );
  }

  /** Range reads; with fan-out, at most `CONSUMER_FILLS` run at once per process. */
  read(fromRevision: number, toRevision: number): AsyncIterable<LogEntry> {
    const read = () => this.reader.read(fromRevision, toRevision);
    return this.fanout ? boundedRead(read) : read();
  }

  follow(fromRevision: number, handler: LogFollowHandler): LogFollower {
    this.assertOpen();
    checkRevision(fromRevision, "fromRevision");
    let created: string | undefined;
    const follower = new LiveFollower(
      {
        gate: this.gate,
        stream: this.stream,
        subject: this.subject,
        timeoutMs: this.timeoutMs,
        ids: this.ids,
        ready: async () => {
          const s = await this.opener.ready();
          created ??= s.created;
          this.opener.checkIncarnation(s.created);
          return { api: s.api, created };
        },
        contiguous: this.contiguous,
        entryExists: (seq) => this.reader.entryExists(seq, "follow"),
        holes: (from, to) => this.reader.holes(from, to, "follow"),
        streamCreated: () => this.reader.streamCreated("follow"),
      },
      this.fanout && {
        gate: this.gate,
        stream: this.stream,
        subject: this.subject,
        contiguous: this.contiguous,
        ids: this.ids,
        ready: () => this.opener.ready(),
        // Own layout: from stream info; shared: read it too (the republish rule as it is now).
        latest: async () =>
          this.contiguous
            ? this.reader.latestRevision("follow")
            : (
                await Promise.all([
                  this.reader.latestRevision("follow"),
                  this.reader.streamCreated("follow"),
                ])
              )[0],
        verify: () => this.reader.streamCreated("follow"),
        read: (from, to) => this.read(from, to),
        tailCheckMs: this.fanout.tailCheckMs,
        reconnectJitterMs: this.fanout.reconnectJitterMs,
      },
      Math.max(1, Math.ceil(fromRevision)),
      // Errors mapped like every call's: a stream deleted once opened is LOG_REPLACED.
      Object.assign(Object.create(handler) as LogFollowHandler, {
        onError: (e: unknown) =>
          handler.onError?.(e instanceof StateSyncError ? this.opener.failure(e, "follow") : e),
      }),
    );
    this.lastFollower = follower;
    this.followers.add(follower);
    return {
      stop: async () => {
        this.followers.delete(follower);
        await follower.stop();
      },
    };
  }

  /**
   * How the follower started last follows: `"republish"` (fan-out) or `"consumer"`; undefined
   * before the first follow, or while the stream is not open yet.
   */
  get liveVia(): LiveVia | undefined {
    return this.lastFollower?.via;
  }

  /**
   * Why fan-out is off although `fanout: { enable: true }` asked for it: the server refused to
   * add the republish rule to the existing stream (nats-server 2.9: 10052), a `STREAM_CONFIG`
   * error with `details.fanout: "consumers"`; live followers then use a consumer each. Undefined
   * otherwise. Also given once to {@link watchWarnings}.
   */
  get fanoutRefused(): StateSyncError | undefined {
    return this.opener.republishRefused;
  }

  /**
   * See {@link RevisionedLog.watchWarnings}: {@link fanoutRefused}, once; and a usable stream's
   * configuration warnings (`STREAM_CONFIG`, `details.usable: true`: a stream without
   * `deny_delete`, see `streamConfigWarnings`), once each.
   */
  watchWarnings(listener: (warning: StateSyncError) => void): () => void {
    this.warningListeners.add(listener);
    for (const w of [...this.warnings]) listener(w);
    return () => {
      this.warningListeners.delete(listener);
    };
  }

  private warn(warning: StateSyncError): void {
    this.warnings.push(warning);
    for (const l of [...this.warningListeners]) {
      try {
        l(warning);
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** A point read by sequence; undefined when absent or on another subject. */
  entryAt(revision: number): Promise<LogEntry | undefined> {
    return this.reader.entryAt(revision);
  }

  /** See {@link RevisionedLog.otherStateAt}: a shared stream's message on another subject. */
  otherStateAt(revision: number): Promise<boolean> {
    return this.layout.shared ? this.reader.otherStateAt(revision) : Promise.resolve(false);
  }

  /** See {@link LogReader.findByMessageId}. */
  findByMessageId(messageId: string, afterRevision: number, scan = 1): Promise<number | undefined> {
    return this.reader.findByMessageId(messageId, afterRevision, scan);
  }

  /** Filtered purge: `purge(stream, { filter: subject, seq: revision })`. */
  async truncateBefore(revision: number): Promise<void> {
    checkRevision(revision, "revision");
    if (this.readOnly) throw this.readOnlyError("truncateBefore");
    const s = await this.opener.ready();
    const seq = Math.floor(revision);
    if (seq <= 1) return;
    try {
      await s.api.streams.purge(this.stream, { filter: this.subject, seq });
    } catch (err) {
      throw this.opener.failure(err, "truncateBefore");
    }
  }

  /**
   * Stops every follower, ends the range reads in flight (`CLOSED`: their pulls are stopped, so
   * that the connection can be closed next without nats.js pulling on it) and stops watching the
   * connection; never closes the connection.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const stop of [...this.configWatches]) stop();
    const followers = [...this.followers];
    this.followers.clear();
    await Promise.all(followers.map((f) => f.stop()));
    this.gate.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new StateSyncError("CLOSED", "the JetStreamLog is closed");
  }
}
