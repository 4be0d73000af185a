import { isStateSyncError } from "../errors.js";
import type { JetStreamAdapter, JetStreamApi } from "./adapter.js";
import { toStateSyncError } from "./nats-errors.js";
import type { MsgHdrsLike } from "./nats-types.js";
import { randomToken } from "./util.js";

/**
 * How `JetStreamLog` reads single messages (the latest entry of a state, the first entry at or
 * after a revision, the entry at a revision):
 * - `"direct"`: `STREAM.MSG.GET` (`last_by_subj`, `next_by_subj`, `seq`): one request each, but
 *   the API reads any sequence of any subject, so a tenant of a shared stream must be denied it
 *   (jetstream-notes "Permissions");
 * - `"consumer"`: an ephemeral consumer filtered to the state's one subject (created on
 *   `$JS.API.CONSUMER.CREATE.<stream>.<name>.<subject>`, which a tenant may be granted for its
 *   own subjects only) and one `no_wait` pull: two requests each, and only the subject's messages
 *   can ever be read;
 * - `"auto"` (default): `"direct"` until the server denies `STREAM.MSG.GET` on the stream once,
 *   then `"consumer"` for that stream on that connection.
 */
export type PointReadMode = "auto" | "direct" | "consumer";

/** A single message read back, whichever way it was read. */
export interface PointMessage {
  readonly subject: string;
  readonly seq: number;
  readonly data: Uint8Array;
  readonly headers: MsgHdrsLike | undefined;
}

/** What a point read needs of the opened stream. */
export interface PointReadTarget {
  /** The connection (its `connection` keys what the server denied it). */
  readonly adapter: JetStreamAdapter;
  readonly api: JetStreamApi;
}

/** Streams on which the server denied `STREAM.MSG.GET` to a connection (mode `"auto"`). */
const directDenied = new WeakMap<object, Set<string>>();

/** How long (ns) an abandoned point-read consumer lives on the server (it is deleted at once). */
const CONSUMER_INACTIVE_NS = 30_000_000_000;

/**
 * Single-message reads of one subject of one stream (see {@link PointReadMode}). Errors are the
 * raw nats.js errors of the way used (either client line), except that "nothing there" answers
 * undefined.
 */
export class PointReader {
  constructor(
    private readonly stream: string,
    private readonly subject: string,
    private readonly mode: PointReadMode,
  ) {}

  /** True when this reader currently reads through consumers on the connection of `t`. */
  usesConsumers(t: PointReadTarget): boolean {
    return (
      this.mode === "consumer" ||
      (this.mode === "auto" && (directDenied.get(t.adapter.connection)?.has(this.stream) ?? false))
    );
  }

  /** The last message on the subject, or undefined when it holds none. */
  last(t: PointReadTarget): Promise<PointMessage | undefined> {
    return this.read(t, { last_by_subj: this.subject }, { deliver_policy: "last_per_subject" });
  }

  /** The first message on the subject with a sequence >= `from`, or undefined. */
  next(t: PointReadTarget, from: number): Promise<PointMessage | undefined> {
    const seq = Math.max(1, Math.floor(from));
    return this.read(
      t,
      { seq, next_by_subj: this.subject },
      { deliver_policy: "by_start_sequence", opt_start_seq: seq },
    );
  }

  /** The message at exactly `seq` if it is on the subject, else undefined. */
  async at(t: PointReadTarget, seq: number): Promise<PointMessage | undefined> {
    if (this.usesConsumers(t)) {
      const m = await this.viaConsumer(t, {
        deliver_policy: "by_start_sequence",
        opt_start_seq: seq,
      });
      return m?.seq === seq ? m : undefined;
    }
    const m = await this.direct(t, { seq });
    if (m === undefined) return undefined;
    // A direct get by sequence reads whatever subject is there: keep only ours.
    return m.subject === this.subject ? m : undefined;
  }

  /**
   * True when the stream holds a message of another subject at exactly `seq` (a direct get by
   * sequence reads any subject); false when it holds this subject's or none, or when reads go
   * through consumers (filtered to this subject: they cannot tell).
   */
  async otherAt(t: PointReadTarget, seq: number): Promise<boolean> {
    if (this.usesConsumers(t)) return false;
    const m = await this.direct(t, { seq });
    return m !== undefined && m.subject !== this.subject;
  }

  private async read(
    t: PointReadTarget,
    query: { last_by_subj: string } | { seq: number; next_by_subj: string },
    policy: { deliver_policy: string; opt_start_seq?: number },
  ): Promise<PointMessage | undefined> {
    if (this.usesConsumers(t)) return this.viaConsumer(t, policy);
    return this.direct(t, query);
  }

  private async direct(
    t: PointReadTarget,
    query: { seq: number; next_by_subj?: string } | { last_by_subj: string },
  ): Promise<PointMessage | undefined> {
    try {
      const m = await t.api.streams.getMessage(this.stream, query);
      if (m === undefined) return undefined;
      return { subject: m.subject, seq: m.seq, data: m.data, headers: m.header };
    } catch (err) {
      if (
        this.mode === "auto" &&
        isStateSyncError(toStateSyncError(err, ""), "PERMISSION_DENIED")
      ) {
        let denied = directDenied.get(t.adapter.connection);
        if (!denied) directDenied.set(t.adapter.connection, (denied = new Set()));
        denied.add(this.stream);
        return this.retryViaConsumer(t, query);
      }
      throw err;
    }
  }

  private retryViaConsumer(
    t: PointReadTarget,
    query: { seq: number; next_by_subj?: string } | { last_by_subj: string },
  ): Promise<PointMessage | undefined> {
    if ("last_by_subj" in query) return this.last(t);
    if (query.next_by_subj !== undefined) return this.next(t, query.seq);
    return this.at(t, query.seq);
  }

  /**
   * Creates an ephemeral consumer filtered to the subject (name in the create subject, so the
   * server checks the filter against a permission on `CONSUMER.CREATE.<stream>.*.<subject>`),
   * pulls one message without waiting when the consumer has any pending, deletes the consumer.
   */
  private async viaConsumer(
    t: PointReadTarget,
    policy: { deliver_policy: string; opt_start_seq?: number },
  ): Promise<PointMessage | undefined> {
    const name = `ssp_${randomToken(12)}`;
    const info = await t.api.consumers.add(this.stream, {
      name,
      filter_subject: this.subject,
      ack_policy: "none",
      mem_storage: true,
      num_replicas: 1,
      inactive_threshold: CONSUMER_INACTIVE_NS,
      ...policy,
    });
    try {
      if (info.num_pending === 0) return undefined;
      // undefined: purged between the create and the pull.
      const m = await t.api.consumers.next(this.stream, name);
      return m && { subject: m.subject, seq: m.seq, data: m.data, headers: m.headers };
    } finally {
      t.api.consumers.delete(this.stream, name).catch(() => undefined);
    }
  }
}
