import { StateSyncError, type LogEntry, type RevisionedLog } from "@statesync/core";
import { checkArgs, isOp, READ_PAGE } from "./op-schemas.js";
import { notSent, toWire } from "./protocol.js";

/**
 * Runs the call `op` (`a`: its arguments as a `req` carries them) on `log`, the leading tab's
 * own, for this tab or another's, and gives the answer as it travels: entries as `toWire` makes
 * them (their own bytes), a `read` one page of at most {@link READ_PAGE} entries. An append is
 * sent only while `stillLeads()` (the fencing: a thawed old leader sends nothing);
 * `otherStateAt` answers `false` on a log without it (as the engine takes such a log).
 *
 * Errors: `VALIDATION` for arguments that are not `op`'s (`op-schemas.ts`; the log is not
 * called), and for an op this version does not know (`details: { unsupportedOp, notSent }`: a
 * tab of a newer version learns at once that this leader cannot run it).
 */
export async function runOp(
  log: RevisionedLog,
  op: string,
  a: unknown[],
  stillLeads: () => boolean,
  signal?: AbortSignal,
): Promise<unknown> {
  if (!isOp(op)) {
    throw new StateSyncError("VALIDATION", `the leading tab does not know the call ${op}`, {
      details: { unsupportedOp: op, notSent: true },
    });
  }
  switch (op) {
    case "info":
      checkArgs(op, a);
      return log.info();
    case "read": {
      const page: LogEntry[] = [];
      for await (const e of log.read(...checkArgs(op, a))) {
        if (page.push(toWire(e)) === READ_PAGE) break;
      }
      return page;
    }
    case "entryAt": {
      const e = await log.entryAt(...checkArgs(op, a));
      return e && toWire(e);
    }
    case "otherStateAt": {
      const [revision] = checkArgs(op, a); // checked also for a log without the method
      return (await log.otherStateAt?.(revision)) ?? false;
    }
    case "findByMessageId":
      return log.findByMessageId(...checkArgs(op, a));
    case "truncateBefore":
      return log.truncateBefore(...checkArgs(op, a));
    case "append": {
      const [data, expected, messageId, timeoutMs] = checkArgs(op, a);
      // The fencing: a leader sends nothing once its token is gone (a thawed old leader).
      if (!stillLeads()) throw notSent("this tab no longer leads");
      const options = { timeoutMs, signal };
      return expected === null
        ? log.appendUnconditional(data, messageId, options)
        : log.appendConditional(data, expected, messageId, options);
    }
  }
}
