/**
 * How much one pull of a log's range reads (and its consumer follower) may ask for, learned per
 * log: the server delivers a pull as fast as it can, and cuts a client whose unsent bytes pass its
 * `max_pending` (64 MiB by default; an operator may set far less) as a slow consumer. Before,
 * pulls were sized by a fixed 16 MiB: on a server with `max_pending` below a pull (256 entries of
 * 1 KB with `max_pending: 64KB`), every catch-up was cut at the same pull again and again and
 * never got further (issue 13, fresh-eyes trial).
 *
 * Rules:
 * 1. A pull asks for at most `limit` bytes, estimating each entry at the largest entry this log
 *    has read (the server's `max_payload` before any), plus {@link MESSAGE_OVERHEAD}; at least one
 *    entry.
 * 2. A pull during which the connection was lost (a cut, see `ConnectionGate.disconnects`) makes
 *    a quarter of the bytes that pull asked for the limit from then on: the client cannot read
 *    the server's `max_pending`, and each cut drops every subscription of the connection, so
 *    few steps (16 MiB to 64 KiB in four); a cut for another reason only makes pulls smaller.
 *    The estimate of rule 1 is wrong when the entries pulled are larger than any read before
 *    (cut before one arrived), so a cut also caps the entries of a pull at a quarter of the cut
 *    pull's, a cap that doubles back with each pull delivered whole.
 * 3. The limit never goes below half the server's `max_payload`: nats-server refuses to start
 *    with `max_pending` below `max_payload`, so such a pull (and any single entry, which the log
 *    keeps under `max_payload`) always fits, and a catch-up always makes progress.
 */

/** Bytes of entries one pull may bring until a cut says less (rule 1). */
export const PULL_BYTES = 16 * 1024 * 1024;
/** Bytes a delivered message costs beyond its data: the `HMSG` line and headers, estimated. */
export const MESSAGE_OVERHEAD = 512;
/** Entries the first pull of a log asks for, at most, before any entry's size is known. */
const FIRST_PULL = 16;
/** The server's `max_payload` when it is not known, bytes. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** The pull size of one log (see the module header). */
export class PullBudget {
  private limitBytes = PULL_BYTES;
  private largest = 0;
  /** Entries a pull may ask for (rule 2): a quarter of a cut pull's, doubling after each good one. */
  private maxBatch = Number.MAX_SAFE_INTEGER;
  private knownPayload = DEFAULT_MAX_PAYLOAD;

  /** `maxPayload` answers the connected server's `max_payload`, if known. */
  constructor(private readonly maxPayload: () => number | undefined) {}

  /** Bytes a pull may ask for now. */
  get limit(): number {
    return this.limitBytes;
  }

  /** An entry of `bytes` was read (rule 1). */
  observe(bytes: number): void {
    if (bytes > this.largest) this.largest = bytes;
  }

  /** Entries the next pull asks for: between 1 and `cap`, at most 16 before any entry was read. */
  batch(cap: number): number {
    const first = this.largest === 0 ? FIRST_PULL : cap;
    const bySize = Math.floor(this.limitBytes / this.perEntry());
    return Math.max(1, Math.min(cap, first, this.maxBatch, bySize));
  }

  /** A pull was delivered without a cut: the entry cap of rule 2 may double again. */
  delivered(): void {
    if (this.maxBatch < Number.MAX_SAFE_INTEGER) this.maxBatch *= 2;
  }

  /** Bytes a pull of `batch` entries is estimated to bring. */
  bytes(batch: number): number {
    return batch * this.perEntry();
  }

  /** A pull of `batch` entries that asked for `requested` bytes was cut (rules 2, 3); answers the new limit. */
  cut(batch: number, requested: number): number {
    this.maxBatch = Math.max(1, Math.floor(batch / 4));
    const floor = Math.floor(this.payload() / 2);
    this.limitBytes = Math.max(floor, Math.floor(Math.min(this.limitBytes, requested) / 4));
    return this.limitBytes;
  }

  /** The server's `max_payload` as last known (nats.js forgets INFO while disconnected). */
  private payload(): number {
    const p = this.maxPayload();
    if (p !== undefined && p > 0) this.knownPayload = p;
    return this.knownPayload;
  }

  private perEntry(): number {
    return (this.largest > 0 ? this.largest : this.payload()) + MESSAGE_OVERHEAD;
  }
}
