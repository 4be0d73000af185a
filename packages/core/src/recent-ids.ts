/**
 * The message ids of the entries a replay consumed recently, with their revisions and
 * timestamps: a ring of fixed capacity (the newest `capacity` are kept), stored in parallel
 * arrays so that recording an entry allocates nothing. A catch-up records every entry, and a
 * `[id, revision, ts]` tuple per entry (its timestamp a heap number) was a good part of what the
 * young generation had to copy in each scavenge (issue 8, "catch-up overhead").
 *
 * The arrays start small and double as entries arrive, up to `capacity` (then the ring wraps).
 * Allocated at full size (8,000 slots, 192 KB a replica), a push touched cold memory in three
 * arrays: with hundreds of followers in one process (the fan-out benchmark, issue 13) each push
 * cost several cache misses, and each replica held 192 KB it mostly never used. The revision and
 * timestamp of a slot sit side by side in one `Float64Array`, one cache line for both.
 */
export class RecentIds {
  private ids: Array<string | undefined>;
  /** `numbers[2i]`: revision of slot i; `numbers[2i + 1]`: its timestamp. */
  private numbers: Float64Array;
  /** Slots allocated now (≤ `capacity`). */
  private allocated: number;
  /** Index of the next slot to write. */
  private next = 0;
  private size = 0;
  /**
   * Every entry with a message id consumed at this revision or later is recorded (Infinity until
   * one is): the first revision recorded since `clear`, moved past each entry the ring drops.
   * Entries of a starting point's list (`push` with `consumed` false) do not count.
   */
  recordedFrom = Infinity;

  /**
   * @param capacity entries kept (the newest).
   * @param initial slots allocated at first (doubled as needed, up to `capacity`).
   */
  constructor(
    private readonly capacity: number,
    private readonly initial = 64,
  ) {
    this.allocated = Math.max(1, Math.min(capacity, initial));
    this.ids = new Array<string | undefined>(this.allocated).fill(undefined);
    this.numbers = new Float64Array(2 * this.allocated);
  }

  /**
   * Records an entry; the oldest is dropped when full. `consumed`: the replica consumed it (else
   * it comes from a starting point's list, which may not name every entry before it).
   */
  push(messageId: string, revision: number, ts: number, consumed = true): void {
    if (this.size === this.allocated && this.allocated < this.capacity) this.grow();
    const i = this.next;
    if (this.size === this.allocated) {
      this.recordedFrom = Math.max(this.recordedFrom, this.numbers[2 * i]! + 1);
    }
    if (consumed && this.recordedFrom === Infinity) this.recordedFrom = revision;
    this.ids[i] = messageId;
    this.numbers[2 * i] = revision;
    this.numbers[2 * i + 1] = ts;
    this.next = i + 1 === this.allocated ? 0 : i + 1;
    if (this.size < this.allocated) this.size += 1;
  }

  /**
   * Doubles the slots (up to `capacity`). Only while the ring has not wrapped: full and below
   * `capacity`, so its entries sit in slots 0..size-1, oldest first.
   */
  private grow(): void {
    const allocated = Math.min(this.capacity, 2 * this.allocated);
    const ids = new Array<string | undefined>(allocated).fill(undefined);
    for (let i = 0; i < this.size; i++) ids[i] = this.ids[i];
    const numbers = new Float64Array(2 * allocated);
    numbers.set(this.numbers);
    this.ids = ids;
    this.numbers = numbers;
    this.allocated = allocated;
    this.next = this.size;
  }

  /** Forgets every entry (and gives back the memory of a grown ring). */
  clear(): void {
    this.allocated = Math.max(1, Math.min(this.capacity, this.initial));
    this.ids = new Array<string | undefined>(this.allocated).fill(undefined);
    this.numbers = new Float64Array(2 * this.allocated);
    this.next = 0;
    this.size = 0;
    this.recordedFrom = Infinity;
  }

  /** The slot of the `k`-th newest entry (1: the newest). */
  private slot(k: number): number {
    return (this.next - k + this.allocated) % this.allocated;
  }

  /** The revision of the newest recorded entry with `messageId`, if one is recorded. */
  revisionOf(messageId: string): number | undefined {
    for (let k = 1; k <= this.size; k++) {
      const i = this.slot(k);
      if (this.ids[i] === messageId) return this.numbers[2 * i];
    }
    return undefined;
  }

  /** The newest `count` (at most) as `[messageId, revision, ts]`, oldest first. */
  last(count: number): Array<[string, number, number]> {
    const n = Math.min(count, this.size);
    const out: Array<[string, number, number]> = [];
    for (let k = n; k >= 1; k--) {
      const i = this.slot(k);
      out.push([this.ids[i]!, this.numbers[2 * i]!, this.numbers[2 * i + 1]!]);
    }
    return out;
  }
}

/**
 * A starting point's `recent` list (a snapshot entry's, or a chunked snapshot's part 0) as far as
 * it can be believed: the ids of entries before the starting point, each revision at most `base`
 * and above the one before it, as `Replay` writes them (oldest first). A list that breaks this
 * (a hostile or damaged entry) is not used at all, so a look-up after a lost acknowledgement
 * answers "unknown" instead of "found" at a revision the log never held (a lost update) or
 * "absent" from an unordered list (a second append of a stored entry).
 */
export function usableRecent(
  recent: ReadonlyArray<readonly [string, number, number]> | undefined,
  base: number,
): ReadonlyArray<readonly [string, number, number]> {
  if (!recent) return [];
  let last = 0;
  for (const [, revision] of recent) {
    if (revision <= last || revision > base) return [];
    last = revision;
  }
  return recent;
}
