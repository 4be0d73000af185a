import type { StateSyncError } from "./errors.js";

/**
 * Options of the automatic compaction policy (`createSynchronizer({ compaction })`). The defaults
 * scale with the state: a compaction writes the whole state, so for a large one it waits until
 * the history since the last snapshot entry costs about as much to read as the state itself
 * (a 100 MB state receiving 1,000 small updates a second compacts every few minutes, not every
 * second). The state's size is that of the last snapshot entry consumed (a chunked one's
 * `parts.bytes`); before the first one, the defaults apply as they are.
 */
export interface CompactionOptions {
  /**
   * Compact after this many entries since the last snapshot entry. Default 1,000, or one per
   * KiB of the state if that is more (100,000 for a 100 MB state).
   */
  everyEntries?: number;
  /**
   * ...or after this many bytes of entries since the last snapshot entry. Default 8 MiB, or half
   * the state's size if that is more.
   */
  everyBytes?: number;
  /**
   * Each client draws its thresholds from [t, t * (1 + jitter)] so that not every client compacts
   * at once; the first one's snapshot entry resets everybody's count. Default 0.5.
   */
  jitter?: number;
}

/**
 * When a replica compacts on its own: after so many entries or bytes since the last snapshot
 * entry, randomised per client. A failure it cannot fix by retrying (no purge permission, a
 * snapshot too large for one message) is reported once and backs off tenfold each time.
 */
export class CompactionPolicy {
  private readonly everyEntries: number | undefined;
  private readonly everyBytes: number | undefined;
  /** Bytes of the state at the last snapshot entry (0: none seen). */
  private stateBytes = 0;
  private readonly jitter: number;
  private entries = 0;
  private bytes = 0;
  private entryThreshold = 0;
  private byteThreshold = 0;
  private backoff = 1;
  private reported = new Set<string>();

  constructor(options: CompactionOptions = {}) {
    this.everyEntries = options.everyEntries;
    this.everyBytes = options.everyBytes;
    this.jitter = options.jitter ?? 0.5;
    this.draw();
  }

  /** The entry threshold before jitter and backoff: the option, or the scaled default. */
  get entriesDue(): number {
    return this.everyEntries ?? Math.max(1_000, Math.ceil(this.stateBytes / 1024));
  }

  /** The byte threshold before jitter and backoff: the option, or the scaled default. */
  get bytesDue(): number {
    return this.everyBytes ?? Math.max(8 * 1024 * 1024, Math.ceil(this.stateBytes / 2));
  }

  private draw(): void {
    const f = 1 + Math.random() * this.jitter;
    this.entryThreshold = Math.ceil(this.entriesDue * f * this.backoff);
    this.byteThreshold = Math.ceil(this.bytesDue * f * this.backoff);
  }

  /**
   * A snapshot or genesis entry was consumed: history starts again from here. `stateBytes`: the
   * size of the state it carries, when it carries one.
   */
  reset(stateBytes?: number): void {
    if (stateBytes !== undefined) this.stateBytes = stateBytes;
    this.entries = 0;
    this.bytes = 0;
    this.draw();
  }

  /** Another entry of `bytes` was consumed. */
  count(bytes: number): void {
    this.entries += 1;
    this.bytes += bytes;
  }

  /** Whether a compaction is due. */
  due(): boolean {
    return this.entries >= this.entryThreshold || this.bytes >= this.byteThreshold;
  }

  /** Lost a race to other writers: due again after another tenth of the thresholds. */
  deferred(): void {
    this.entryThreshold = this.entries + Math.ceil(this.entriesDue / 10);
    this.byteThreshold = this.bytes + Math.ceil(this.bytesDue / 10);
  }

  succeeded(): void {
    this.backoff = 1;
    this.reset();
  }

  /** Backs off; returns true when the error should be reported (once per code). */
  failed(error: StateSyncError): boolean {
    this.backoff = Math.min(this.backoff * 10, 1_000_000);
    this.draw();
    if (this.reported.has(error.code)) return false;
    this.reported.add(error.code);
    return true;
  }
}
