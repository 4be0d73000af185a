/**
 * Opening a log's stream on a connection, and what the log keeps per connection.
 *
 * Responsibilities: wait for the connection (through the {@link ConnectionGate}), open its
 * JetStream API (client and manager, through the connection's {@link JetStreamAdapter}), create the stream when missing and allowed, check its
 * configuration (`STREAM_CONFIG`; a usable stream's warnings, such as `deny_delete` off, once
 * each through `onConfigWarning`), and keep what later calls need from it ({@link StreamSession}:
 * creation time, `max_msg_size`, `duplicate_window`). Maps client errors for the rest of the log
 * ({@link StreamOpener.failure}).
 *
 * Invariants:
 * 1. At most one opening runs at a time: concurrent callers share one promise; a failed opening
 *    is forgotten, so the next call tries again.
 * 2. A session is forgotten when an error says the stream is gone (`TRUNCATED`) or unsafe
 *    (`STREAM_CONFIG`): the next call re-opens and re-checks it (and re-creates it if allowed).
 * 3. Every fresh stream info a caller reads goes through {@link StreamOpener.observe}, so the
 *    session's limits never lag what the log last saw, and a configuration made unsafe since
 *    the opening is refused (`STREAM_CONFIG`).
 * 4. The shared layout is refused (`UNSUPPORTED_SERVER`) on every call while the connection is
 *    to a clustered server too old for it: after a reconnect it may be another server.
 */
import { StateSyncError } from "../errors.js";
import type { JetStreamAdapter, JetStreamApi } from "./adapter.js";
import type { ConnectionGate } from "./connection-gate.js";
import { cutShortApi } from "./cut-short.js";
import type { JetStreamLayout } from "./layout.js";
import { apiErrorCode, JS_ERR, toStateSyncError } from "./nats-errors.js";
import type { StreamInfoLike } from "./nats-types.js";
import { assertSharedLayoutSupported } from "./server-version.js";
import { enableRepublish, liveSubjectOf, republishRule } from "./republish.js";
import {
  assertStreamConfig,
  configWarning,
  ensureStream,
  HEADER_ALLOWANCE_BYTES,
  messageSizeProblem,
} from "./stream-config.js";

export { HEADER_ALLOWANCE_BYTES } from "./stream-config.js";

/** How long after opening a stream a clustered server's "stream not found" is taken as transient, ms. */
const STREAM_SETTLE_MS = 10_000;

/** The server's default `duplicate_window` (2 minutes), ms. */
const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;

/** What the log learned when it opened the stream on a connection. */
export interface StreamSession {
  /** The connection, as its client line's adapter. */
  readonly adapter: JetStreamAdapter;
  /** Its JetStream API, opened with the log's request timeout. */
  readonly api: JetStreamApi;
  /** Stream creation time as last seen. */
  created: string;
  /** Stream `max_msg_size` as last seen (-1: none). */
  maxMsgSize: number;
  /** Stream `duplicate_window` as last seen, ms. */
  duplicateWindowMs: number;
  /** The core subject this state's entries are republished on, as last seen (docs/fanout.md). */
  liveSubject: string | undefined;
  /** Stream `allow_direct` as last seen. */
  allowDirect: boolean;
}

/** What a {@link StreamOpener} needs from its log. */
export interface StreamOpenerOptions {
  readonly gate: ConnectionGate;
  readonly layout: JetStreamLayout;
  /** Create the stream when missing. */
  readonly create: boolean;
  /** Only read: a sealed stream is accepted (`streamConfigProblems`'s `readOnly`). */
  readonly readOnly?: boolean;
  /** Replicas of a created stream. */
  readonly replicas: number;
  /** Timeout of each request and of the wait for a pending connection, ms. */
  readonly timeoutMs: number;
  /** JetStream domain of the stream (API prefix `$JS.<domain>.API`), if not the local one. */
  readonly domain?: string | undefined;
  /** Throws `CLOSED` once the log is closed. */
  assertOpen(): void;
  /**
   * Fan-out (docs/fanout.md): a created stream gets a republish rule under `prefix`; with
   * `enable`, an existing stream without a rule gets one by a stream update (where the server
   * refuses, as 2.9.10 does, the log follows with consumers, and says so: `onRepublishRefused`).
   */
  readonly fanout?: { readonly prefix: string; readonly enable: boolean } | undefined;
  /** Called once when the server refuses to add the republish rule (`fanout.enable`). */
  readonly onRepublishRefused?: (error: StateSyncError) => void;
  /**
   * Called once per distinct warning about a stream the log uses anyway (`configWarning`: a
   * stream without `deny_delete`), at the opening or at a later read of its configuration.
   */
  readonly onConfigWarning?: (warning: StateSyncError) => void;
}

function duplicateWindowMs(si: StreamInfoLike): number {
  const ns = si.config.duplicate_window;
  return typeof ns === "number" && ns > 0 ? ns / 1_000_000 : DEFAULT_DUPLICATE_WINDOW_MS;
}

/**
 * The error of an opening that no JetStream answered: its stream-info request got `503` no
 * responders, with the connection up. A client of a leaf node without JetStream whose hub holds
 * the streams in a domain stays unanswered without the `domain` option (nats-server denies the
 * plain `$JS.API.>` across a leaf connection), and so does a server or account without
 * JetStream. Still `UNAVAILABLE` (the leaf's connection to the hub may come up; the replica
 * keeps trying), with `details.persistent: true` (the log port's mark of a problem that lasts
 * until the setup changes: the engine reports it) and `details.jetstream: "unreachable"`.
 * Undefined for any other error.
 */
function jetStreamUnreachable(
  err: unknown,
  adapter: JetStreamAdapter,
  stream: string,
  domain: string | undefined,
): StateSyncError | undefined {
  if (!(err instanceof StateSyncError) || err.code !== "UNAVAILABLE") return undefined;
  if (err.details.natsCode !== "503") return undefined;
  const api = domain === undefined ? "$JS.API" : `$JS.${domain}.API`;
  const info = adapter.info;
  const server = info
    ? ` (nats-server ${info.version}${info.jetstream ? "" : ", without JetStream of its own"})`
    : "";
  const hint =
    domain === undefined
      ? 'if the stream lives in another JetStream domain (a hub behind this leaf node), set the `domain` option (README "Beyond one server"); otherwise enable JetStream for this account'
      : `check the domain's name and that this server reaches the server of domain "${domain}" (a leaf node's connection to its hub)`;
  return new StateSyncError(
    "UNAVAILABLE",
    `JetStream is not reachable in this account${domain === undefined ? "" : ` and domain "${domain}"`}: nobody answered ${api}.STREAM.INFO.${stream} (503 no responders)${server}; ${hint}. Retrying.`,
    { cause: err, details: { ...err.details, jetstream: "unreachable", domain, persistent: true } },
  );
}

/** Opens and re-opens the stream of one log (see the module header). */
export class StreamOpener {
  private session: Promise<StreamSession> | undefined;
  /** Creation time of the stream as first opened: the log's identity from then on. */
  private firstCreated: string | undefined;
  /** Set once the stream turned out to be another incarnation: every call throws it. */
  private replaced: StateSyncError | undefined;
  /** When the stream was last opened (ms), and whether on a clustered server. */
  private openedAt = -Infinity;
  private clustered = false;
  /** Why the server refused to add a republish rule (fan-out `enable`), if it did. */
  republishRefused: StateSyncError | undefined;
  /** The configuration warnings given so far (by message): each is given once. */
  private readonly warned = new Set<string>();

  constructor(private readonly o: StreamOpenerOptions) {}

  /**
   * The session, with the stream opened and checked. Throws `CLOSED`, `UNAVAILABLE` (no
   * connection within the timeout, or disconnected), `UNSUPPORTED_SERVER`, `STREAM_CONFIG`,
   * `PERMISSION_DENIED`.
   */
  async ready(): Promise<StreamSession> {
    this.o.assertOpen();
    if (this.replaced) throw this.replaced;
    const adapter = await this.o.gate.get(this.o.timeoutMs);
    this.o.assertOpen();
    if (this.o.layout.shared) assertSharedLayoutSupported(adapter.info);
    if (!this.session) {
      const session = this.open(adapter);
      this.session = session;
      session.catch(() => {
        if (this.session === session) this.session = undefined;
      });
    }
    return this.session;
  }

  /** Records what a fresh stream info says and re-checks the configuration (invariant 3). */
  observe(s: StreamSession, si: StreamInfoLike): void {
    this.checkIncarnation(si.created);
    assertStreamConfig(si, this.o.layout, { readOnly: this.o.readOnly });
    this.warnAbout(si);
    s.created = si.created;
    s.maxMsgSize = si.config.max_msg_size ?? -1;
    s.duplicateWindowMs = duplicateWindowMs(si);
    s.liveSubject = liveSubjectOf(si.config.republish, this.o.layout.subject);
    s.allowDirect = si.config.allow_direct === true;
  }

  /** Gives a usable stream's configuration warning (`configWarning`), once per distinct one. */
  private warnAbout(si: StreamInfoLike): void {
    const warning = configWarning(si.config, this.o.layout);
    if (warning === undefined || this.warned.has(warning.message)) return;
    this.warned.add(warning.message);
    this.o.onConfigWarning?.(warning);
  }

  /** Fresh stream info of the session's stream, observed. Throws the raw client error. */
  async streamInfo(s: StreamSession): Promise<StreamInfoLike> {
    const si = await s.api.streams.info(this.o.layout.stream);
    this.observe(s, si);
    return si;
  }

  /**
   * Maps a client error (`toStateSyncError`, `what` and the subject in the message); forgets the
   * session when the stream is gone or unsafe (invariant 2).
   */
  failure(err: unknown, what: string, expectedRevision?: number): StateSyncError {
    const error = toStateSyncError(err, `${what} ${this.o.layout.subject}`, expectedRevision);
    // No answer in time: is the server still there at all? (ConnectionGate.suspect)
    if (error.code === "UNAVAILABLE" && error.details.natsCode === "TIMEOUT") {
      this.o.gate.suspect(this.o.timeoutMs);
    }
    if (error.code === "TRUNCATED" || error.code === "STREAM_CONFIG") this.session = undefined;
    // No responders: no stream took the subject. A deleted stream, or a cluster electing its
    // leader: the next call opens the stream again, which tells them apart (a trial: a replica
    // whose re-sends met only this said `live` until the update's outcomeTimeoutMs).
    if (error.code === "UNAVAILABLE" && error.details.natsCode === "503") this.session = undefined;
    // On a cluster, a stream this log has just created or found may not be known yet to the node
    // that answers (seen on 2.10 with R3 streams: "stream not found" right after the creation,
    // and every other replica stalled). Not a deletion: the caller retries, and the next call
    // opens the stream again.
    const deleted = error.code === "TRUNCATED" && error.details.errCode === JS_ERR.STREAM_NOT_FOUND;
    if (deleted && this.firstCreated !== undefined && !this.settling()) {
      return this.markReplaced(`stream ${this.o.layout.stream} was deleted`, error);
    }
    if (error.code === "TRUNCATED" && this.settling()) return this.notKnownYet(error);
    return error;
  }

  /** Whether the stream was opened on a cluster less than {@link STREAM_SETTLE_MS} ago. */
  private settling(): boolean {
    return this.clustered && Date.now() - this.openedAt < STREAM_SETTLE_MS;
  }

  /** `error` (a "stream not found") as `UNAVAILABLE`: the answering node does not know it yet. */
  private notKnownYet(error: StateSyncError): StateSyncError {
    const age = Date.now() - this.openedAt;
    return new StateSyncError(
      "UNAVAILABLE",
      `${error.message}; the stream was opened ${age} ms ago on a cluster: taken as not known to the answering server yet`,
      { cause: error, details: { ...error.details, notSent: true } }, // nothing was stored
    );
  }

  /**
   * Largest entry accepted, bytes: the smaller of the server's `max_payload` (1 MiB when
   * unknown) and the stream's `max_msg_size`, less {@link HEADER_ALLOWANCE_BYTES}.
   */
  maxEntryBytes(s: StreamSession): number {
    const payload = s.adapter.info?.max_payload ?? 1024 * 1024;
    const limit = s.maxMsgSize > 0 ? Math.min(payload, s.maxMsgSize) : payload;
    return Math.max(0, limit - HEADER_ALLOWANCE_BYTES);
  }

  /**
   * Throws `LOG_REPLACED` (and keeps throwing it) when `created` is not the creation time of the
   * stream as first opened: the stream was deleted and created again (issue 10, case 3).
   */
  checkIncarnation(reported: string): void {
    if (this.replaced) throw this.replaced;
    const created = knownCreated(reported);
    if (created === undefined) return; // nothing to tell one stream from another by
    this.firstCreated ??= created;
    if (created === this.firstCreated) return;
    throw this.markReplaced(
      `stream ${this.o.layout.stream} was deleted and created again (created ${created}, opened as ${this.firstCreated})`,
    );
  }

  /**
   * The creation time that names this log (its identity): the stream's as first opened, or
   * `reported` when this opener has not seen one yet; undefined while neither is known (the
   * server reports Go's zero time: see {@link knownCreated}).
   */
  identityCreated(reported: string): string | undefined {
    return this.firstCreated ?? knownCreated(reported);
  }

  /**
   * Remembers that the log this opener opened is gone; every later call throws the error.
   * `details.why` is what happened without the advice to a replica (the CLI gives its own).
   */
  private markReplaced(why: string, cause?: unknown): StateSyncError {
    this.replaced ??= new StateSyncError(
      "LOG_REPLACED",
      `${why}: this replica's log is gone; open a new replica to use a new one`,
      { cause, details: { stream: this.o.layout.stream, opened: this.firstCreated, why } },
    );
    this.session = undefined;
    return this.replaced;
  }

  private async open(adapter: JetStreamAdapter): Promise<StreamSession> {
    let api: JetStreamApi;
    try {
      // A request in flight when the connection drops ends at once (cut-short.ts).
      api = cutShortApi(await adapter.open(this.o.timeoutMs, this.o.domain), this.o.gate);
    } catch (err) {
      throw toStateSyncError(err, "open the JetStream manager");
    }
    // Only the first opening may create the stream: once opened, a missing stream was deleted
    // (TRUNCATED), and one created since is another log (LOG_REPLACED), never re-created here.
    const first = this.firstCreated === undefined;
    let si: StreamInfoLike;
    const fanout = this.o.fanout;
    try {
      const rule = fanout && republishRule(this.o.layout, fanout.prefix);
      const create = first && this.o.create;
      const readOnly = this.o.readOnly;
      si = await ensureStream(api, this.o.layout, create, this.o.replicas, rule, readOnly);
      if (fanout?.enable && !si.config.republish && this.republishRefused === undefined) {
        si = await enableRepublish(api, si, this.o.layout, fanout.prefix).catch((e: unknown) => {
          if (!(e instanceof StateSyncError) || e.code !== "STREAM_CONFIG") throw e;
          // Followers use consumers (docs/fanout.md); said once, not in silence (issue 13).
          this.republishRefused = new StateSyncError(
            "STREAM_CONFIG",
            `${e.message}; fan-out is off for this log: live followers use a consumer each (create the stream with fan-out, or use nats-server 2.10+)`,
            { cause: e, details: { ...e.details, fanout: "consumers" } },
          );
          this.o.onRepublishRefused?.(this.republishRefused);
          return si;
        });
      }
    } catch (err) {
      const missing = apiErrorCode((err as { cause?: unknown }).cause) === JS_ERR.STREAM_NOT_FOUND;
      if (!first && err instanceof StateSyncError && err.code === "STREAM_CONFIG" && missing) {
        // The re-open after a cluster's transient "stream not found" (see failure) may meet it
        // again: still transient within the settling time, else a deletion.
        if (this.settling()) throw this.notKnownYet(err);
        throw this.markReplaced(`stream ${this.o.layout.stream} was deleted`, err);
      }
      throw jetStreamUnreachable(err, adapter, this.o.layout.stream, this.o.domain) ?? err;
    }
    this.checkIncarnation(si.created);
    // The stream's own limit is among its configuration's problems (ensureStream); the server's
    // is known only here.
    const payload = this.o.readOnly
      ? undefined
      : messageSizeProblem(undefined, adapter.info?.max_payload);
    if (payload !== undefined) {
      throw new StateSyncError("UNSUPPORTED_SERVER", `stream ${this.o.layout.stream}: ${payload}`, {
        details: { stream: this.o.layout.stream, maxPayload: adapter.info?.max_payload },
      });
    }
    this.warnAbout(si);
    this.openedAt = Date.now();
    this.clustered = adapter.info?.cluster !== undefined && adapter.info.cluster !== "";
    return {
      adapter,
      api,
      created: si.created,
      maxMsgSize: si.config.max_msg_size ?? -1,
      duplicateWindowMs: duplicateWindowMs(si),
      liveSubject: liveSubjectOf(si.config.republish, this.o.layout.subject),
      allowDirect: si.config.allow_direct === true,
    };
  }
}

/**
 * A stream's creation time as its identity, or undefined when the server does not know it: Go's
 * zero time (`0001-01-01T00:00:00Z`), which nats-server reported right after a restart on the
 * same store while it recovered the stream (seen in CI; the replica stopped `LOG_REPLACED`).
 */
function knownCreated(created: string | undefined): string | undefined {
  return created === undefined || created === "" || created.startsWith("0001-01-01")
    ? undefined
    : created;
}
