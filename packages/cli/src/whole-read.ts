/**
 * Reads of a range of the log that say how far they got when they fail: every command that
 * reads the log reads all it meant to, up to the latest revision the log had when the command
 * started, or fails with `UNAVAILABLE` naming the last revision read (`incompleteRead`). The
 * engine's range read never ends short unless the rest was truncated; it throws when the server
 * stops answering (`read …: TIMEOUT`, which said nothing of how far it got).
 */
import type { JetStreamLog, LogEntry } from "@statesync/node";
import { incompleteRead } from "./replica.js";
import { isServerGone } from "./server-gone.js";

/**
 * The entries of `log` from `from` to `to`, in order (as `log.read`). A failure of the server
 * midway is the `UNAVAILABLE` of {@link incompleteRead} (the last revision read, `to`), with
 * the server's error as its cause; other errors go through as they are.
 */
export async function* readWhole(
  log: JetStreamLog,
  from: number,
  to: number,
): AsyncGenerator<LogEntry> {
  let last = from - 1;
  try {
    for await (const entry of log.read(from, to)) {
      last = entry.revision;
      yield entry;
    }
  } catch (err) {
    if (!isServerGone(err)) throw err; // a connection closed for good too (server-gone.ts)
    throw incompleteRead(Math.max(0, last), to, undefined, err);
  }
}
