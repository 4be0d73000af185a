import type { StateSyncError } from "./errors.js";

/** Options of the automatic compaction policy (`createSynchronizer({ compaction })`). */
export interface CompactionOptions {
  /** Compact after this many entries since the last snapshot entry. Default 1,000. */
  everyEntries?: number;
  /** ...or after this many bytes of entries since the last snapshot entry. Default 8 MiB. */
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
  private readonly everyEntries: number;
  private readonly everyBytes: number;
  private readonly jitter: number;
  private entries = 0;
  private bytes = 0;
  private entryThreshold = 0;
  private byteThreshold = 0;
  private backoff = 1;
  private reported = new Set<string>();

  constructor(options: CompactionOptions = {}) {
    this.everyEntries = options.everyEntries ?? 1_000;
    this.everyBytes = options.everyBytes ?? 8 * 1024 * 1024;
    this.jitter = options.jitter ?? 0.5;
    this.draw();
  }

  private draw(): void {
    const f = 1 + Math.random() * this.jitter;
    this.entryThreshold = Math.ceil(this.everyEntries * f * this.backoff);
    this.byteThreshold = Math.ceil(this.everyBytes * f * this.backoff);
  }

  /** A snapshot or genesis entry was consumed: history starts again from here. */
  reset(): void {
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
    this.entryThreshold = this.entries + Math.ceil(this.everyEntries / 10);
    this.byteThreshold = this.bytes + Math.ceil(this.everyBytes / 10);
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
