import { isStateSyncError, StateSyncError } from "../errors.js";
import type { StatusHub } from "./status.js";
import { ENDED, within } from "./wait-limits.js";

/** What an append's failures say (appender invariant 3): the errors `Appender` rejects with. */

/**
 * `UNKNOWN_OUTCOME` for a re-send that failed with `cause` after an earlier attempt's outcome was
 * unknown (found by the fault tests' checker: a re-send denied after a lost acknowledgement was
 * reported `PERMISSION_DENIED`, "nothing appended", though the first attempt was in the log).
 */
export function outcomeUnknown(cause: unknown, messageId: string): StateSyncError {
  if (isStateSyncError(cause, "UNKNOWN_OUTCOME")) return cause;
  const why = cause instanceof Error ? cause.message : String(cause);
  return new StateSyncError(
    "UNKNOWN_OUTCOME",
    `the append may or may not be stored: an earlier attempt's outcome is unknown and the re-send failed (${why})`,
    { cause, details: { messageId } },
  );
}

/**
 * Why an append's re-sends ended at its deadline (`timeoutMs`, ms) with its outcome unknown:
 * other writers' entries won `conflicts` of the `resends` (the log answered: a trial read "no
 * answer" while it answered every re-send with a conflict), and whether the `last` attempt or
 * look-up got no answer (the last failure alone read "no answer" after many conflicts).
 */
export function endedWhy(
  timeoutMs: number,
  resends: number,
  conflicts: number,
  last: unknown,
): string {
  // A look-up still waiting for its turn, queued or scanning at the deadline (a trial: 20
  // re-senders of one replica on a log answering 250 appends a second read "the log did not
  // answer").
  const cut = isStateSyncError(last, "UNAVAILABLE") && last.details.lookupCut === true;
  if (conflicts === 0) {
    return cut
      ? `the look-up of an earlier send did not finish within ${timeoutMs} ms`
      : `no answer from the log within ${timeoutMs} ms`;
  }
  const which = conflicts === resends ? "every re-send" : `${conflicts} of ${resends} re-sends`;
  const tail = isStateSyncError(last, "CONFLICT")
    ? ""
    : cut
      ? ", and then the deadline came before its next look-up finished"
      : ", and then the log did not answer";
  return `within ${timeoutMs} ms, ${which} (conditional on the tail its look-up checked) conflicted with other writers' entries${tail}`;
}

/** `UNKNOWN_OUTCOME` when the log cannot tell whether an earlier attempt was stored. */
export function unknownBecause(why: string, messageId: string): StateSyncError {
  return new StateSyncError("UNKNOWN_OUTCOME", `the append may or may not be stored: ${why}`, {
    details: { messageId },
  });
}

/**
 * The error an append ends with when the log stayed unreachable until its deadline (its
 * `outcomeTimeoutMs`, ms; undefined when the replica closed first) and nothing was sent: `UNAVAILABLE`, saying how long the whole wait lasted and how many attempts it made.
 * The last attempt's own error (say "not connected to NATS within 5000 ms", true of that one
 * attempt) is its `cause`; quoted alone after a 37 s wait it misled (issue 12).
 */
export function unreachableFor(
  failure: unknown,
  waitedMs: number,
  attempts: number,
  outcomeTimeoutMs: number | undefined,
): StateSyncError {
  const last = failure instanceof Error ? failure.message : String(failure);
  const details = isStateSyncError(failure) ? failure.details : {};
  const tried = `${attempts} ${attempts === 1 ? "attempt" : "attempts"}; the last: ${last}`;
  return new StateSyncError(
    "UNAVAILABLE",
    `nothing was appended: the log was unreachable for ${waitedMs} ms (${attempts === 0 ? last : tried})`,
    {
      cause: failure,
      details: {
        ...details,
        notSent: true,
        waitedMs,
        attempts,
        // Past its deadline: the same details as an update that timed out unsent (`unsent`).
        ...(outcomeTimeoutMs !== undefined ? { timedOut: true, outcomeTimeoutMs } : {}),
      },
    },
  );
}

/**
 * `LOG_REPLACED` for an unconditional entry acknowledged at `storedAt`, at or before `after` (the
 * tail it had to land behind): the log that stored it is not the one this replica applied. Found
 * by a fresh-eyes trial: a stream deleted and re-created within milliseconds under a replica
 * writing commands; its command landed at revision 1 of the new stream and resolved as applied.
 * The entry is stored there; the replica is stalled (`status`) so that nothing more is.
 */
export function storedElsewhere(
  status: Pick<StatusHub, "stall">,
  storedAt: number,
  after: number,
  messageId: string,
): StateSyncError {
  const error = new StateSyncError(
    "LOG_REPLACED",
    `the command was stored at revision ${storedAt}, at or before this replica's revision ${after}: in another log than the one this replica applied (its stream deleted and created again, or a log that went back); the replica stops, keeping its last state, and writes nothing more: open a new replica`,
    { details: { storedAt, revision: after, messageId } },
  );
  status.stall(error);
  return error;
}

/**
 * A look-up of an earlier send, ended by the caller's `signal` too: `UNAVAILABLE` (the outcome
 * stays unknown) once it aborts. Before, an abort during a re-send waited for the look-up's
 * request timeout, 5 s against a frozen server (a fresh-eyes trial). The update's deadline
 * ends it too (`UNAVAILABLE`, and the loop answers `UNKNOWN_OUTCOME`): look-ups that scanned a
 * loaded log again and again, cut short by compactions, settled an update 102.7 s into its
 * 30 s `outcomeTimeoutMs` (a trial, stop 28).
 */
export async function lookupBounded<T>(
  work: Promise<T>,
  deadline: number,
  signal?: AbortSignal,
): Promise<T> {
  // (Not `close()`: it waits for the appends already sent, look-ups included.)
  const result = await within(work, { deadline, signal: signal ?? NEVER });
  if (result !== ENDED) return result;
  const by = signal?.aborted ? "its signal" : "the update's outcomeTimeoutMs";
  throw new StateSyncError("UNAVAILABLE", `the look-up of an earlier send was cut short by ${by}`, {
    details: { lookupCut: true },
  });
}

/** A signal that never aborts. */
const NEVER = new AbortController().signal;
