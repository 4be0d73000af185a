/**
 * How a fan-out follower fills a gap (docs/fanout.md): the entries of one state with
 * `from <= seq <= to` that the republished messages did not bring.
 *
 * - Small gaps on a stream with `allow_direct`, where this connection may use it: direct gets
 *   (`$JS.API.DIRECT.GET.<stream>`, `{ seq, next_by_subj }`), one request per entry and no
 *   consumer. On a cluster any replica may answer, also one that lags just after a write: when
 *   the entry the republished headers promise (`expected`) is not there, the read is tried again
 *   a few times, then done through a consumer (the leader's view); a miss is never a gap.
 * - Otherwise (a large gap, no `allow_direct`, direct get denied as for tenants of a shared
 *   stream): the log's range read, an ordered consumer that lives for this read only. At most
 *   {@link CONSUMER_FILLS} of those run at once per process ({@link boundedRead}), so that
 *   thousands of followers recovering after a server restart do not create thousands of
 *   consumers at one instant.
 */
import { isStateSyncError } from "../errors.js";
import type { LogEntry } from "../log.js";
import { toStateSyncError } from "./nats-errors.js";
import type { StreamSession } from "./stream-session.js";
import { MSG_ID_HEADER, type MessageIdCodec } from "./util.js";

/** Largest gap read with direct gets; a longer one is read through a consumer. */
export const DIRECT_GAP_MAX = 32;
/** Consumer reads (gap fills) running at once in one process, over all followers. */
export const CONSUMER_FILLS = 8;
/** Direct-get tries of an entry that should be there before reading through a consumer. */
const DIRECT_TRIES = 3;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A counting semaphore: `run` waits for a free slot. */
class Slots {
  private free: number;
  private readonly waiting: Array<() => void> = [];
  constructor(size: number) {
    this.free = size;
  }
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free -= 1;
    else await new Promise<void>((r) => this.waiting.push(r));
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.free += 1;
    };
  }
}

const consumerSlots = new Slots(CONSUMER_FILLS);

/** Connections on which the server denied direct get for a stream. */
const directDenied = new WeakMap<object, Set<string>>();

/** What {@link readGap} needs. */
export interface GapSource {
  readonly stream: string;
  readonly subject: string;
  readonly ids: MessageIdCodec;
  /** The log's range read (ordered consumer; bounded by {@link boundedRead}). */
  read(from: number, to: number): AsyncIterable<LogEntry>;
}

/**
 * The entries with `from <= seq <= to`, in order; `expected` is a sequence in that range the
 * republished headers say the stream holds (0: none known). Throws what the log throws.
 */
export async function* readGap(
  source: GapSource,
  s: StreamSession,
  from: number,
  to: number,
  expected: number,
): AsyncGenerator<LogEntry> {
  if (from > to) return;
  let next = from;
  if (to - from < DIRECT_GAP_MAX && mayDirect(source, s)) {
    for (let tries = 0; next <= to;) {
      const m = await direct(source, s, next);
      if (m === "denied") break;
      if (m === undefined || m.revision > to) {
        // Nothing more in the range. Fine unless the headers promised an entry at or after
        // `next`: then this replica lags (try again), or the entry was truncated meanwhile (the
        // consumer read below, on the leader, tells).
        if (expected < next) return;
        if (++tries >= DIRECT_TRIES) break;
        await sleep(25 * 2 ** tries);
        continue;
      }
      tries = 0;
      next = m.revision + 1;
      yield m;
    }
    if (next > to) return;
  }
  for await (const e of source.read(next, to)) {
    if (e.revision < next) continue;
    next = e.revision + 1;
    yield e;
  }
}

/**
 * A range read that waits for one of the process's {@link CONSUMER_FILLS} slots first: every
 * range read of a fan-out log (gap fills, and the engine's catch-ups after a reconnection) goes
 * through it.
 */
export async function* boundedRead<T>(read: () => AsyncIterable<T>): AsyncGenerator<T> {
  const release = await consumerSlots.acquire();
  try {
    yield* read();
  } finally {
    release();
  }
}

function mayDirect(source: GapSource, s: StreamSession): boolean {
  return (
    s.allowDirect &&
    s.api.direct !== undefined &&
    !(directDenied.get(s.adapter.connection)?.has(source.stream) ?? false)
  );
}

/** One direct get of the first entry at or after `seq`; "denied" once the server refuses it. */
async function direct(
  source: GapSource,
  s: StreamSession,
  seq: number,
): Promise<LogEntry | undefined | "denied"> {
  try {
    const m = await s.api.direct!.getMessage(source.stream, { seq, next_by_subj: source.subject });
    if (m === undefined) return undefined;
    return {
      revision: m.seq,
      data: m.data,
      messageId: source.ids.decode(m.header?.get(MSG_ID_HEADER) ?? ""),
    };
  } catch (err) {
    if (isStateSyncError(toStateSyncError(err, ""), "PERMISSION_DENIED")) {
      let denied = directDenied.get(s.adapter.connection);
      if (!denied) directDenied.set(s.adapter.connection, (denied = new Set()));
      denied.add(source.stream);
      return "denied";
    }
    throw err;
  }
}
