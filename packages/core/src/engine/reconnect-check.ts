import { sleep } from "../backoff.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import type { RevisionedLog } from "../log.js";
import type { CommandMap } from "../model.js";
import { logWentBack } from "./log-changes.js";
import type { Reader } from "./reader.js";
import type { Replica } from "./replica.js";
import type { StatusHub } from "./status.js";

/** Wait before asking again after a check the log could not answer, ms: doubling to the max. */
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;

/**
 * The check after a reconnection (opener invariant 7) while the reader holds the log's entries
 * back (reader invariant 5): the log still holds what the replica applied (`logWentBack`), else
 * the replica stalls `LOG_REPLACED`. Resolves true once the check passed and the hold was
 * released; false when the replica stopped, or a newer hold (the connection was lost again)
 * belongs to a newer check.
 *
 * A check the log cannot answer (a request that times out, `UNAVAILABLE`, a point read denied)
 * is no answer: the entries stay held and the check is asked again (250 ms doubling to 5 s)
 * until it answers, the replica stays `offline`, and each new problem is reported once as an
 * error event (a `STREAM_CONFIG` problem by the configuration check, as ever). Before, such a
 * failure released the entries, and a replica on a rewound log applied its entries and went on
 * `live` on a diverged state (a trial: a proxy dropped the server's answers to the point read
 * for 3 s).
 */
export async function checkAfterReconnect<S, C extends CommandMap<S>>(
  log: RevisionedLog,
  replica: Replica<S, C>,
  reader: Reader<S, C>,
  status: StatusHub,
): Promise<boolean> {
  const token = reader.holdToken;
  const current = () => !status.stopped && reader.holdToken === token;
  let reported: string | undefined;
  for (let delay = RETRY_MIN_MS; ; delay = Math.min(RETRY_MAX_MS, delay * 2)) {
    try {
      const wentBack = await logWentBack(log, replica);
      if (!current()) return false;
      if (wentBack) {
        status.stall(wentBack);
        return false;
      }
      reader.release(token);
      return true;
    } catch (e) {
      if (!current()) return false;
      status.fatal(e); // a closed connection, a log replaced meanwhile
      if (status.stopped) return false;
      const error = uncheckedError(e, replica.revision);
      // A configuration problem is reported by the configuration check (`ConfigWatch`), once.
      const own = !isStateSyncError(e, "STREAM_CONFIG");
      if (own && error.message !== reported) status.report(error);
      reported = error.message;
      await sleep(delay, status.signal).catch(() => undefined);
      if (!current()) return false;
    }
  }
}

/** The error event of a check that got no answer: the log's own code, `cause` its error. */
function uncheckedError(cause: unknown, revision: number): StateSyncError {
  const code = cause instanceof StateSyncError ? cause.code : "UNAVAILABLE";
  const why = cause instanceof Error ? cause.message : String(cause);
  return new StateSyncError(
    code,
    `after reconnecting, the log could not say whether it still holds this replica's revision ${revision} (${why}): its entries wait, and updates wait, until it can; asking again`,
    { cause },
  );
}
