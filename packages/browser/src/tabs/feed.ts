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
 *
 * A follower that starts behind what the source already passed (its head: the last entry
 * pushed, or the one before where the source started) first reads up to it: what was pushed
 * before it subscribed reached no one, and the source does not send it again. Before, a replica
 * whose follow began just after the leading tab's follower had delivered the next entry, or
 * after that follower started past it (both start around an opening, and a server restart lined
 * them up), waited for a later entry that might never come: `live` at an old revision for good
 * (a trial: pages stuck after a nats-server restart).
 */
export class EntryFeed {
  private readonly subscribers = new Set<Subscriber>();
  /** The highest revision the source delivered, or is past by where it started (0: none). */
  private sourceHead = 0;

  constructor(
    private readonly contiguous: boolean,
    private readonly read: RangeRead,
  ) {}

  /** One entry, and the revision of the one its source delivered before it (if it knows it). */
  push(entry: LogEntry, prev: number | undefined): void {
    this.sourceHead = Math.max(this.sourceHead, entry.revision);
    for (const s of this.subscribers) s.offer(entry, prev);
  }

  /**
   * The source follows from `fromRevision` on: it will never push anything before it, so a
   * follower behind it reads up to it first, one that subscribed while the source was starting
   * too (the leading tab's follower starts at the log's latest revision + 1 when no one followed
   * as it asked for that revision).
   */
  sourceStarts(fromRevision: number): void {
    this.sourceHead = Math.max(this.sourceHead, fromRevision - 1);
    for (const s of this.subscribers) if (s.next <= this.sourceHead) s.catchUp(this.sourceHead);
  }

  /**
   * The source's follow failed for good (its `onError`): each follower's follow ends with
   * `error` (its handler's `onError`), as a follow of the log itself would.
   */
  fail(error: unknown): void {
    for (const s of [...this.subscribers]) {
      this.subscribers.delete(s);
      s.fail(error);
    }
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
    if (this.sourceHead >= s.next) s.catchUp(this.sourceHead);
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
  /** Entries with the revision of the one before them, or a revision to read up to (a number). */
  private readonly queue: Array<[LogEntry, number | undefined] | number> = [];

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

  fail(error: unknown): void {
    if (this.stopped) return;
    this.stopped = true;
    this.handler.onError?.(error);
  }

  /** Reads up to `revision` (what the source passed before this follower subscribed). */
  catchUp(revision: number): void {
    this.queue.push(revision);
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
        const item = this.queue[0]!;
        const [entry, prev] = typeof item === "number" ? [undefined, undefined] : item;
        const upTo = entry?.revision ?? (item as number);
        const fits =
          entry !== undefined &&
          (this.contiguous ? upTo === this.next : prev !== undefined && prev < this.next);
        if (upTo >= this.next && !fits) {
          try {
            for await (const e of this.read(this.next, upTo)) this.deliver(e);
          } catch {
            setTimeout(() => void this.drain(), 500);
            return;
          }
          // Not reached (the source is ahead of what can be read): the replica catches up later.
        } else if (entry) {
          this.deliver(entry);
        }
        this.queue.shift();
      }
    } finally {
      this.busy = false;
    }
  }
}
