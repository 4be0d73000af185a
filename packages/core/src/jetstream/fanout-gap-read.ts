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
 *   stream, or in a state's own stream a sequence the direct get passed over): the log's range
 *   read (which reads a used-up sequence as a skipped entry, and starts at the snapshot entry a
 *   truncated log starts with), an ordered consumer that lives for this read only. At most
 *   `CONSUMER_FILLS` of those run at once per process (`boundedRead`, fanout-gaps.ts), so that
 *   thousands of followers recovering after a server restart do not create thousands of
 *   consumers at one instant.
 *
 * Loaded on demand with the fan-out follower (see live-follower.ts): it imports nothing at run
 * time, what it needs of the log's code comes in as `FanoutDeps`.
 */
import type { LogEntry } from "../log.js";
import type { FanoutDeps } from "./fanout-follower.js";
import type { StreamSession } from "./stream-session.js";
import type { MessageIdCodec } from "./util.js";

/** Largest gap read with direct gets; a longer one is read through a consumer. */
export const DIRECT_GAP_MAX = 32;
/** Direct-get tries of an entry that should be there before reading through a consumer. */
const DIRECT_TRIES = 3;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Connections on which the server denied direct get for a stream. */
const directDenied = new WeakMap<object, Set<string>>();

/** What {@link readGap} needs. */
export interface GapSource {
  readonly stream: string;
  readonly subject: string;
  /** The state's own stream: every sequence is the state's, so a direct get may skip none. */
  readonly contiguous: boolean;
  readonly ids: MessageIdCodec;
  /** The log's range read (ordered consumer; bounded by `boundedRead`). */
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
  deps: FanoutDeps,
): AsyncGenerator<LogEntry> {
  if (from > to) return;
  let next = from;
  if (to - from < DIRECT_GAP_MAX && mayDirect(source, s)) {
    for (let tries = 0; next <= to;) {
      const m = await direct(source, s, next, deps);
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
      // Own stream: a sequence the direct get passed over (used up by a refused publish, or
      // purged) is the range read's to decide (a skipped entry, or the snapshot entry the log
      // starts at): handed on as a jump, it stopped the replica TRUNCATED (a trial, 2.9.10).
      if (source.contiguous && m.revision !== next) break;
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
  { isStateSyncError, toStateSyncError, MSG_ID_HEADER }: FanoutDeps,
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
