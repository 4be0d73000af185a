/**
 * What a rejected update means for the checker, after the README's "update" section: the codes
 * that say nothing was appended (`VALIDATION`, `RETRY_LIMIT`, `ABORTED`, `CLOSED`, ...) and
 * `UNAVAILABLE` with `details.notSent` (every wait before sending ended); every other rejection
 * (`UNKNOWN_OUTCOME`, `UNAVAILABLE` after a send) leaves the outcome unknown: at most once.
 */
import { classify, type Outcome } from "../support/checker.js";

/** The {@link Outcome} a rejection of `update` or `updateUnconditionally` stands for. */
export function outcomeOf(error: unknown): Outcome {
  const e = error as { code?: unknown; details?: { notSent?: unknown } } | undefined;
  if (e?.code === "UNAVAILABLE" && e.details?.notSent === true) {
    return { status: "failed", code: "UNAVAILABLE(notSent)" };
  }
  return classify(error);
}
