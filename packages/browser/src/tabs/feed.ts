import type { LogEntry, LogFollowHandler, LogFollower } from "@statesync/core";

/** Reads entries `from..to` (inclusive) from wherever the tab's log reads now. */
export type RangeRead = (from: number, to: number) => AsyncIterable<LogEntry>;

/**
 * Hands the entries a tab hears of (from its own log while it leads, from the leader's `entry`
 * messages while it follows) to the log's followers, each in order and each once, never across a
 * gap: an entry that does not follow on from what a follower has (the revision after it in a
 * contiguous log; in another, an entry whose `prev` is before it) makes that follower read the
 * range in between first. An entry it cannot place even then is dropped (the replica's own
 * catch-up fills the gap later); a read that fails is tried again after a while.
 */
export class EntryFeed {
  private readonly subscribers = new Set<Subscriber>();

  constructor(
    private readonly contiguous: boolean,
    private readonly read: RangeRead,
  ) {}

  /** One entry, and the revision of the one its source delivered before it (if it knows it). */
  push(entry: LogEntry, prev: number | undefined): void {
    for (const s of this.subscribers) s.offer(entry, prev);
  }

  /** The highest revision any follower has been given (0: none). */
  get position(): number {
    let p = 0;
    for (const s of this.subscribers) p = Math.max(p, s.next - 1);
    return p;
  }

  /** A follower from `fromRevision` (see `RevisionedLog.follow`). */
  follow(fromRevision: number, handler: LogFollowHandler): LogFollower {
    const s = new Subscriber(fromRevision, handler, this.contiguous, this.read);
    this.subscribers.add(s);
    return {
      stop: async () => {
        s.stopped = true;
        this.subscribers.delete(s);
      },
    };
  }
}

class Subscriber {
  stopped = false;
  private busy = false;
  private readonly queue: Array<[LogEntry, number | undefined]> = [];

  constructor(
    public next: number,
    private readonly handler: LogFollowHandler,
    private readonly contiguous: boolean,
    private readonly read: RangeRead,
  ) {}

  offer(entry: LogEntry, prev: number | undefined): void {
    if (entry.revision < this.next) return;
    this.queue.push([entry, prev]);
    void this.drain();
  }

  private deliver(entry: LogEntry): void {
    if (this.stopped || entry.revision < this.next) return;
    this.next = entry.revision + 1;
    this.handler.onEntry(entry);
  }

  private async drain(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      while (this.queue.length > 0 && !this.stopped) {
        const [entry, prev] = this.queue[0]!;
        const fits = this.contiguous
          ? entry.revision === this.next
          : prev !== undefined && prev < this.next;
        if (entry.revision >= this.next && !fits) {
          try {
            for await (const e of this.read(this.next, entry.revision)) this.deliver(e);
          } catch {
            setTimeout(() => void this.drain(), 500);
            return;
          }
          // Not reached (the source is ahead of what can be read): the replica catches up later.
        } else {
          this.deliver(entry);
        }
        this.queue.shift();
      }
    } finally {
      this.busy = false;
    }
  }
}
