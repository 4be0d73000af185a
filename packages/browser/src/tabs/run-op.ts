import { StateSyncError, type LogEntry, type RevisionedLog } from "@statesync/core";
import { notSent, otherStateAtArgs, toWire, type Op } from "./protocol.js";

/** Entries per `read` answer. */
export const READ_PAGE = 256;

/**
 * Runs the call `op` (`args` as a `req` carries them) on `log`, the leading tab's own, for this
 * tab or another's: a `read` answers one page of at most {@link READ_PAGE} entries, and entries
 * are answered as they travel (`toWire`: their own bytes); an append is sent only while `stillLeads()` (the fencing: a thawed old leader sends
 * nothing); `otherStateAt` answers `false` on a log without it (as the engine takes such a log).
 * Malformed arguments: `VALIDATION`.
 */
export async function runOp(
  log: RevisionedLog,
  op: Op,
  a: unknown[],
  stillLeads: () => boolean,
  signal?: AbortSignal,
): Promise<unknown> {
  if (op === "read") {
    const page: LogEntry[] = [];
    for await (const e of log.read(a[0] as number, a[1] as number)) {
      if (page.push(toWire(e)) === READ_PAGE) break;
    }
    return page;
  }
  if (op === "otherStateAt") {
    const parsed = otherStateAtArgs.safeParse(a);
    if (!parsed.success) throw new StateSyncError("VALIDATION", "a malformed otherStateAt request");
    return (await log.otherStateAt?.(parsed.data[0])) ?? false;
  }
  if (op === "entryAt") {
    const e = await log.entryAt(a[0] as number);
    return e && toWire(e); // its own bytes, as a `read` page's
  }
  if (op !== "append") return (log[op] as (...args: unknown[]) => Promise<unknown>).apply(log, a);
  const [data, expected, messageId, timeoutMs] = a as [Uint8Array, number | null, string, number];
  if (!(data instanceof Uint8Array) || typeof messageId !== "string") {
    throw new StateSyncError("VALIDATION", "a malformed append request");
  }
  // The fencing: a leader sends nothing once its token is gone (a thawed old leader).
  if (!stillLeads()) throw notSent("this tab no longer leads");
  const options = { timeoutMs, signal };
  return expected === null
    ? log.appendUnconditional(data, messageId, options)
    : log.appendConditional(data, expected, messageId, options);
}
