/**
 * The message ids of the entries a replay consumed recently, with their revisions and
 * timestamps: a ring of fixed capacity (the newest `capacity` are kept), stored in parallel
 * arrays so that recording an entry allocates nothing. A catch-up records every entry, and a
 * `[id, revision, ts]` tuple per entry (its timestamp a heap number) was a good part of what the
 * young generation had to copy in each scavenge (issue 8, "catch-up overhead").
 */
export class RecentIds {
  private readonly ids: Array<string | undefined>;
  private readonly revisions: Float64Array;
  private readonly timestamps: Float64Array;
  /** Index of the next slot to write. */
  private next = 0;
  private size = 0;

  constructor(private readonly capacity: number) {
    this.ids = new Array<string | undefined>(capacity).fill(undefined);
    this.revisions = new Float64Array(capacity);
    this.timestamps = new Float64Array(capacity);
  }

  /** Records an entry; the oldest is dropped when full. */
  push(messageId: string, revision: number, ts: number): void {
    const i = this.next;
    this.ids[i] = messageId;
    this.revisions[i] = revision;
    this.timestamps[i] = ts;
    this.next = i + 1 === this.capacity ? 0 : i + 1;
    if (this.size < this.capacity) this.size += 1;
  }

  /** Forgets every entry. */
  clear(): void {
    this.ids.fill(undefined);
    this.next = 0;
    this.size = 0;
  }

  /** The revision of the newest recorded entry with `messageId`, if one is recorded. */
  revisionOf(messageId: string): number | undefined {
    for (let k = 1; k <= this.size; k++) {
      const i = (this.next - k + this.capacity) % this.capacity;
      if (this.ids[i] === messageId) return this.revisions[i];
    }
    return undefined;
  }

  /** The newest `count` (at most) as `[messageId, revision, ts]`, oldest first. */
  last(count: number): Array<[string, number, number]> {
    const n = Math.min(count, this.size);
    const out: Array<[string, number, number]> = [];
    for (let k = n; k >= 1; k--) {
      const i = (this.next - k + this.capacity) % this.capacity;
      out.push([this.ids[i]!, this.revisions[i]!, this.timestamps[i]!]);
    }
    return out;
  }
}
