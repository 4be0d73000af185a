/**
 * JetStream publishes of the v2 line without nats.js's request machinery (`PublishRequests`).
 *
 * `js.publish` is a request: per call nats.js v2 builds a `RequestOne` (a deferred, a timeout
 * promise) and, once answered, a `NatsError` (`Cancelled`, with its stack) in `cancel()`, all
 * behind a generator-based `async`. In the awaited single-writer benchmark that was about 40%
 * of the client's CPU per raw publish (pinned: 68-73 µs against 41-42 µs for this path, in one
 * run; the `NatsError` alone 4.4% of statesync's busy time). This path does what the request
 * does on the wire: one subscription per connection on `<inbox prefix>.<random>.*` (as nats.js's
 * own request multiplexer), a `PUB` with a reply subject and the headers, and the PubAck read as
 * `js.publish` reads it. Errors keep nats.js's shapes (`code`, `api_error`, `permissionContext`),
 * so `toStateSyncError` maps them as before:
 * - the PubAck's `error` → an error with `code` (its HTTP-like code) and `api_error`;
 * - a status reply without data (`503` no responders) → `code: "503"`;
 * - no answer within `timeout` ms → `code: "TIMEOUT"`;
 * - the connection closed → `code: "CONNECTION_CLOSED"`; a synchronous throw of `publish`
 *   (`MAX_PAYLOAD_EXCEEDED`, a closed connection) → that error;
 * - a publish the server denies (a status event `PERMISSIONS_VIOLATION` for operation `publish`
 *   on the subject) → the oldest request to that subject fails with it, as nats.js's
 *   multiplexer does; a denied subscription of the inbox fails every request in flight and the
 *   next publish subscribes again (as nats.js).
 */
import { randomId } from "../prng.js";
import type { NatsStatusLike, PubAckLike, PublishOptionsLike } from "./nats-types.js";

/** What a v2 connection offers this path (nats.js `NatsConnection`, the parts used). */
export interface PublishConnectionLike {
  publish(
    subject: string,
    data: Uint8Array,
    options: { reply: string; headers: { encode(): Uint8Array } },
  ): void;
  subscribe(
    subject: string,
    options: { callback: (err: Error | null, msg: ReplyMsgLike) => void },
  ): { unsubscribe(): void };
  status(): AsyncIterable<NatsStatusLike> & { stop?(): void };
  closed(): Promise<void | Error>;
  isClosed(): boolean;
  /** nats.js keeps its connect options here; `inboxPrefix` is honoured. */
  readonly options?: { readonly inboxPrefix?: string | undefined } | undefined;
}

/** A reply as this path reads it. */
export interface ReplyMsgLike {
  readonly subject: string;
  readonly data: Uint8Array;
  /** nats.js `MsgHdrsImpl`: a status reply carries `code` (503: no responders). */
  readonly headers?: { readonly code?: number; readonly description?: string } | undefined;
}

interface Pending {
  readonly subject: string;
  readonly resolve: (ack: PubAckLike) => void;
  readonly reject: (err: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** An `Error` carrying nats.js's fields (see the module header). */
function natsError(message: string, fields: Record<string, unknown>): Error {
  return Object.assign(new Error(message), fields);
}

/** The publish path of one connection (see the module header); {@link publishRequests}. */
export class PublishRequests {
  private readonly pending = new Map<string, Pending>();
  private prefix = "";
  private sub: { unsubscribe(): void } | undefined;
  private counter = 0;
  private watching = false;

  constructor(private readonly nc: PublishConnectionLike) {}

  /**
   * Publishes `data` to `subject` with `Nats-Msg-Id` and expectations as `js.publish` sets them,
   * and resolves with the PubAck (`duplicate` false when absent). Rejects as the module header
   * says, with nats.js's error shapes.
   */
  publish(subject: string, data: Uint8Array, options: PublishOptionsLike): Promise<PubAckLike> {
    try {
      this.subscribe();
    } catch (err) {
      return Promise.reject(err as Error); // a closed connection: nats.js's own error
    }
    let text = "NATS/1.0\r\n";
    if (options.msgID) text += `Nats-Msg-Id: ${options.msgID}\r\n`;
    const expect = options.expect;
    if (typeof expect?.lastSequence === "number") {
      text += `Nats-Expected-Last-Sequence: ${expect.lastSequence}\r\n`;
    }
    if (typeof expect?.lastSubjectSequence === "number") {
      text += `Nats-Expected-Last-Subject-Sequence: ${expect.lastSubjectSequence}\r\n`;
    }
    const bytes = encoder.encode(`${text}\r\n`);
    const token = String(++this.counter);
    return new Promise<PubAckLike>((resolve, reject) => {
      const timer = setTimeout(() => {
        if (this.pending.delete(token)) reject(natsError("TIMEOUT", { code: "TIMEOUT" }));
      }, options.timeout ?? 5_000);
      this.pending.set(token, { subject, resolve, reject, timer });
      try {
        this.nc.publish(subject, data, {
          reply: this.prefix + token,
          headers: { encode: () => bytes },
        });
      } catch (err) {
        this.settle(token)?.reject(err as Error);
      }
    });
  }

  /** Takes the request `token` out of the pending ones (its timer stopped), if still there. */
  private settle(token: string): Pending | undefined {
    const p = this.pending.get(token);
    if (p === undefined) return undefined;
    this.pending.delete(token);
    clearTimeout(p.timer);
    return p;
  }

  /** Subscribes the inbox unless subscribed; watches the connection's status once. */
  private subscribe(): void {
    if (this.sub !== undefined) return;
    const base = this.nc.options?.inboxPrefix || "_INBOX";
    this.prefix = `${base}.${randomId(11)}.`;
    this.sub = this.nc.subscribe(`${this.prefix}*`, {
      callback: (err, msg) => (err ? this.denied(err) : this.answer(msg)),
    });
    if (!this.watching) {
      this.watching = true;
      void this.watch();
      void this.nc.closed().then(() => this.failAll(closedError()));
    }
  }

  /** A reply: the PubAck of a pending request, or its failure. */
  private answer(msg: ReplyMsgLike): void {
    const p = this.settle(msg.subject.slice(this.prefix.length));
    if (p === undefined) return; // timed out already
    const code = msg.headers?.code;
    if (msg.data.length === 0 && code !== undefined && code >= 300) {
      return p.reject(natsError(String(code), { code: String(code) }));
    }
    let ack: { stream?: unknown; seq?: unknown; duplicate?: unknown; error?: unknown };
    try {
      ack = JSON.parse(decoder.decode(msg.data)) as typeof ack;
    } catch (e) {
      return p.reject(
        natsError(`bad JSON in a publish acknowledgement: ${String(e)}`, { code: "BAD_JSON" }),
      );
    }
    const error = ack.error as { code?: number; description?: string } | undefined;
    if (error !== undefined && error !== null) {
      const description = String(error.description ?? "JetStream error");
      return p.reject(natsError(description, { code: String(error.code), api_error: error }));
    }
    if (typeof ack.stream !== "string" || ack.stream === "") {
      return p.reject(natsError("invalid JetStream ack", { code: "JESTREAM_INVALID_ACK" }));
    }
    p.resolve({ stream: ack.stream, seq: ack.seq as number, duplicate: ack.duplicate === true });
  }

  /** The inbox subscription was denied: every request in flight fails; the next subscribes. */
  private denied(err: Error): void {
    this.sub = undefined;
    this.failAll(err);
  }

  private failAll(err: Error): void {
    for (const token of [...this.pending.keys()]) this.settle(token)?.reject(err);
  }

  /** Fails the oldest request to a subject whose publish the server denied (nats.js's rule). */
  private async watch(): Promise<void> {
    for await (const s of this.nc.status()) {
      const ctx = s.permissionContext;
      if (s.type !== "error" || ctx?.operation !== "publish") continue;
      for (const [token, p] of this.pending) {
        if (p.subject !== ctx.subject) continue;
        this.settle(token);
        const text = `Permissions Violation for Publish to "${ctx.subject}"`;
        p.reject(natsError(text, { code: String(s.data), permissionContext: ctx }));
        break;
      }
    }
  }
}

function closedError(): Error {
  return natsError("CONNECTION_CLOSED", { code: "CONNECTION_CLOSED" });
}

const byConnection = new WeakMap<object, PublishRequests>();

/**
 * The publish path of `nc` (one per connection, for as long as it lives, as nats.js's own
 * request multiplexer), or undefined when `nc` lacks what it needs (then `js.publish` is used).
 */
export function publishRequests(nc: object): PublishRequests | undefined {
  const c = nc as Partial<PublishConnectionLike>;
  if (typeof c.publish !== "function" || typeof c.subscribe !== "function") return undefined;
  if (typeof c.status !== "function" || typeof c.closed !== "function") return undefined;
  let p = byConnection.get(nc);
  if (p === undefined) byConnection.set(nc, (p = new PublishRequests(nc as PublishConnectionLike)));
  return p;
}
