/**
 * Where a replica's replay began: the log it reads, watched. `verify` reported the replay as
 * starting at the first retained revision it read before opening the replica, and printed
 * `replayed revisions 1 to N` when the replica had started later (the history before a
 * compaction's snapshot entry truncated in between, or entries read past to a starting point).
 */
import type { JetStreamLog, LogEntry } from "@statesync/node";

/** A log whose reads are watched until {@link ReadWatch.stop}. */
export interface ReadWatch {
  /** The log to hand to the replica: `log` itself, its range reads watched. */
  readonly log: JetStreamLog;
  /** The lowest revision of an entry read while watching (undefined: none was). */
  first(): number | undefined;
  /** Stops watching (reads after it, such as `stateAt`'s, are not counted). */
  stop(): void;
}

/** Watches the range reads (`read`) of `log`; every other member is the log's own. */
export function watchReads(log: JetStreamLog): ReadWatch {
  let first: number | undefined;
  let watching = true;
  async function* read(from: number, to: number): AsyncGenerator<LogEntry> {
    for await (const entry of log.read(from, to)) {
      if (watching && !entry.skipped && (first === undefined || entry.revision < first)) {
        first = entry.revision;
      }
      yield entry;
    }
  }
  const watched = new Proxy(log, {
    get(target, property) {
      if (property === "read") return read;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? (value as () => unknown).bind(target) : value;
    },
  });
  return {
    log: watched,
    first: () => first,
    stop: () => {
      watching = false;
    },
  };
}
