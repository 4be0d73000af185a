import { AppendConflictError, StateSyncError } from "../errors.js";
import type { RevisionedLog } from "../log.js";

/**
 * Whose entry the log holds at `revision`, when not `data`: `"entry"` (this state's, other bytes),
 * `"state"` (another state's: `revision` is not this state's latest then), else false. Asked when
 * the message id an append was sent under answered a revision (a duplicate acknowledgement, or a
 * look-up by id). Message ids are predictable (`<client>-<instance>-<n>`, shown by `history()`), so
 * another program that may publish on the subject can store its own entry under the id this
 * replica sends next: the server then drops this replica's append as a duplicate and acknowledges
 * the other entry's revision (a hostile-input trial: the update resolved as committed, lost, and
 * the writer adopted its own state at that revision while every other replica held the other
 * entry's). The bytes settle it, as `OwnEntries.take` does. In a shared stream the server drops
 * a duplicate id stream-wide, so the entry may be another state's (another key's subject, which a
 * tenant may publish on): `entryAt` then finds none of this state, and `otherStateAt` tells. False
 * when the entry is not retained (truncated since: nothing tells then) or the log cannot be read
 * now (as before: trusted). (Never concluded from what a read did not find: a direct get may be
 * answered by a stream replica that lags, so only an entry found there settles it.)
 */
export async function heldByAnother(
  log: RevisionedLog,
  revision: number,
  data: Uint8Array,
): Promise<"entry" | "state" | false> {
  let stored;
  try {
    stored = await log.entryAt(revision);
  } catch {
    return false;
  }
  if (stored === undefined) {
    const other = await log.otherStateAt?.(revision).catch(() => false);
    return other === true ? "state" : false;
  }
  const held = stored.data;
  if (held.length !== data.length) return "entry";
  for (let i = 0; i < held.length; i++) if (held[i] !== data[i]) return "entry";
  return false;
}

/** Message ids an unconditional append finds taken, one after the other, before it gives up. */
export const MAX_TAKEN_IDS = 8;

/**
 * The error of an append whose message id names another entry (at `revision`): nothing of it is
 * stored. A conditional one lost its race to that entry (`CONFLICT`: its recipe runs again, under
 * a new id); an unconditional one is sent again under a new id, and past {@link MAX_TAKEN_IDS}
 * ids taken fails `UNAVAILABLE` (`notSent`: nothing appended). `by`: whose entry took it
 * (`heldByAnother`); another state's says nothing of this state's latest revision.
 */
export function idTaken(
  messageId: string,
  revision: number,
  expected: number | undefined,
  taken: number,
  by: "entry" | "state",
): StateSyncError {
  if (expected !== undefined) {
    return new AppendConflictError(expected, by === "entry" ? revision : undefined);
  }
  return new StateSyncError(
    "UNAVAILABLE",
    `nothing was appended: ${taken + 1} message ids in a row (the last ${JSON.stringify(messageId)}) ` +
      `were taken by entries another program published under them (revision ${revision}): grant publish on the subject only to the state's writers`,
    { details: { notSent: true, messageId, takenBy: revision } },
  );
}
