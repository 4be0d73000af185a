import { isStateSyncError, StateSyncError } from "../errors.js";
import { decodeEntry, type SnapshotEntry } from "../entry.js";
import type { LogEntry, LogInfo, RevisionedLog } from "../log.js";
import type { KeptOverReset } from "../replay-state.js";
import type { Appender } from "./appender.js";
import type { StatusHub } from "./status.js";

// What a replica does when the log changed shape under it, found when it (re)connects.

/**
 * After a reconnection: whether the log still holds what this replica applied. A log that went
 * back (a single server that lost its last acknowledged appends at a power loss, a store restored
 * from a backup) answers with a latest revision before the replica's, or with another entry at
 * the replica's revision; a replica that went on would ignore the log's new entries at the
 * revisions it holds and apply the later ones on its own state, and its conditional updates
 * would be accepted on that state (found by a fresh-eyes trial: no event, `live`, diverged).
 * The same check a restored local snapshot gets at open (`Snapshots.checkAgainstLog`).
 *
 * Resolves to the `LOG_REPLACED` error the replica stalls with (`details.rewound: true`, its
 * revision, the log's latest, the `problem` in words), or undefined when the log holds its
 * position (or no longer holds that entry because it was truncated or purged, which the catch-up
 * handles). Also `tail`'s check in the CLI (`replica`: the last entry it printed). Rejects as the
 * log does (`UNAVAILABLE`, ...): the next reconnection checks again.
 */
export async function logWentBack(
  log: Pick<RevisionedLog, "info" | "entryAt" | "contiguous">,
  replica: { readonly revision: number; readonly messageId: string | undefined },
): Promise<StateSyncError | undefined> {
  const revision = replica.revision;
  const messageId = replica.messageId;
  if (revision === 0) return undefined;
  const info = await log.info();
  let problem: string | undefined;
  // A key of a shared stream with no entries was purged, not rewound: the key starts again from
  // its next genesis entry (a trial found replicas stalled here).
  if (!log.contiguous && info.latestRevision === 0) return undefined;
  if (info.latestRevision < revision) {
    problem = `its latest revision is ${info.latestRevision}, before this replica's ${revision}`;
  } else if (messageId !== undefined && revision >= info.firstRevision && info.firstRevision > 0) {
    const entry = await log.entryAt(revision);
    // Gone (a message delete, a purge): the catch-up decides; another entry is another history.
    if (entry !== undefined && entry.messageId !== messageId) {
      problem = `its entry at revision ${revision} is another one than this replica applied`;
    }
  }
  // Whatever the replica applied meanwhile (its follower resumes by itself), the log no longer
  // holds what it had applied at `revision`.
  if (problem === undefined) return undefined;
  return wentBackError(problem, revision, info.latestRevision);
}

/** The `LOG_REPLACED` stall error of a log that went back: `problem` says how it showed. */
function wentBackError(problem: string, revision: number, latest: number): StateSyncError {
  return new StateSyncError(
    "LOG_REPLACED",
    `the log went back under this replica: ${problem} (a server that lost acknowledged appends, or a store restored from a backup); the replica stops, keeping its last state, and writes nothing more: open a new replica`,
    { details: { rewound: true, revision, latest, problem } },
  );
}

/**
 * A local snapshot kept over a purged log (`Snapshots.keptOverPurge`: an operator purged the whole
 * stream, and nothing after the snapshot's revision is missing) is written back into the log:
 * `compact` appends the state as a snapshot entry and truncates the history before it, so
 * replicas without a local snapshot can open the log again. Before, the holder wrote on and every
 * fresh replica's opening failed `TRUNCATED` for good (fresh-eyes trial). An update that lands
 * first is fine (the compaction truncates before its snapshot entry); a fresh replica that opens
 * first starts the empty log again from the initial state (the opener's re-anchoring), which the
 * holder then reads like any snapshot entry. Runs in the background; a failure is a `TRUNCATED`
 * event, not a stop.
 */
export function writeBackAfterPurge(
  compact: (() => Promise<unknown>) | undefined,
  status: StatusHub,
): void {
  if (!compact || status.stopped) return;
  compact().catch((e: unknown) => {
    if (status.closed || isStateSyncError(e, "CLOSED")) return;
    const why = e instanceof Error ? e.message : String(e);
    status.report(
      new StateSyncError(
        "TRUNCATED",
        `the log's entries up to this replica's local snapshot were purged, and writing its state back into the log failed (${why}): replicas without a local snapshot cannot open it until a compaction succeeds`,
        { cause: e },
      ),
    );
  });
}

/**
 * The same write-back for a replica that stays live across an operator's purge of the whole
 * stream: called with each configuration check's `info` (`ConfigWatch.onChecked`: after every
 * reconnection and periodically, 5-10 minutes apart while the stream-update notices work, a purge
 * sending none). When the log's first retained revision is past the last start this replica
 * consumed (or nothing is retained) and that first entry is no start, `compact` writes the state
 * back (`writeBackAfterPurge`). Before, a live replica was never told, and every fresh replica's
 * opening failed `TRUNCATED` until some compaction (fresh-eyes trial; a known limit). A
 * compaction by another replica that this one has not read yet starts with its snapshot entry:
 * one point read, nothing written.
 */
export function writeBackWhenPurged(
  log: RevisionedLog,
  replica: { readonly anchored: boolean; readonly lastStart: number | undefined },
  compact: () => Promise<unknown>,
  status: StatusHub,
): (info: LogInfo) => void {
  let looking = false;
  return (info) => {
    if (looking || status.stopped || !replica.anchored) return;
    const emptied = info.firstRevision === 0 && info.latestRevision > 0;
    if (!emptied && info.firstRevision <= (replica.lastStart ?? 0)) return;
    looking = true;
    logHasStart(log, info)
      .then((has) => {
        if (!has) writeBackAfterPurge(compact, status);
      })
      .catch(() => undefined) // the next check looks again
      .finally(() => (looking = false));
  };
}

/**
 * Whether the log's retained history holds an entry a replica can start from (a genesis,
 * snapshot, switch entry or a chunked snapshot's part), first or after entries it reads past:
 * true after an ordinary compaction, false after an operator's purge of the whole stream
 * (nothing retained, or only updates after it). Only then
 * does a snapshot kept over it need writing back (`writeBackAfterPurge`; a trial found it ran
 * after every compaction, also with `compaction: false`). Rejects as the log does.
 */
export async function logHasStart(log: RevisionedLog, info: LogInfo): Promise<boolean> {
  if (info.firstRevision === 0) return false;
  const first = await log.entryAt(info.firstRevision);
  if (first === undefined) return true; // gone meanwhile: a compaction is at work
  if (isStart(first)) return true;
  // A replica reads past what it cannot start from to a start after it (`Replay.readPast`: a
  // purge undone in part leaves entries before the snapshot entry); then nothing is written back.
  for await (const e of log.read(info.firstRevision + 1, info.latestRevision)) {
    if (isStart(e)) return true;
  }
  return false;
}

function isStart(e: LogEntry): boolean {
  const decoded = decodeEntry(e.data);
  return decoded.ok && ["genesis", "snapshot", "switch", "part"].includes(decoded.entry.kind);
}

/**
 * The log's latest revision, as a conflict reported it, is before this replica's: in a shared
 * stream with none left, the key was purged by an operator, and the replica starts it again like
 * an opener (`appendGenesis`, conditional: one wins) and then reads that genesis entry, which
 * restarts it (`Replay.step`); anything else is a log that went back: the `LOG_REPLACED` stall
 * error. Before, the writer took it for contention, appended an intent and committed its update
 * on the old state into the emptied key, which no fresh replica could then open (trial).
 */
export function logBehindError(revision: number, latest: number): StateSyncError {
  const problem = `its latest revision is ${latest}, before this replica's ${revision}`;
  return wentBackError(problem, revision, latest);
}

/**
 * Writes back the state a re-anchoring replaced (`KeptOverReset`, replay-state.ts): a snapshot
 * entry of it based on the re-anchoring entry's revision, appended only if the log is still at
 * that revision, which every replica (the one that re-anchored included) then takes like any
 * snapshot entry. So a whole-stream purge keeps the state of the replicas that held it, whoever
 * opens the emptied log first; before, a replica without a state that opened it first reset the
 * state of every replica (stop 25's trial, HIGH). When another entry came first (a write made on
 * the reset state), the log's state stands, reported as a `TRUNCATED` event: writing over that
 * entry would drop it. In the background; a failure is an event, not a stop.
 */
export function writeBackOverReset(
  kept: KeptOverReset,
  clientId: string,
  appender: Appender,
  status: StatusHub,
): void {
  const { at, model, origins, switchedFrom } = kept;
  const entry: SnapshotEntry = {
    ...{ v: 1, kind: "snapshot", base: at, ts: Date.now(), client: clientId },
    ...{ model: model.name, version: model.version, initialHash: model.initialHash },
    ...{ state: kept.state, recent: kept.recent },
    ...(switchedFrom !== undefined ? { from: switchedFrom } : {}),
    ...(origins !== undefined ? { origins } : {}),
  };
  const lost = (why: string, cause?: unknown) => {
    if (status.closed) return;
    status.report(
      new StateSyncError(
        "TRUNCATED",
        `the state this replica held at revision ${kept.from} was not written back over the log's restart from the initial state at revision ${at}: ${why}; the state is the log's`,
        { cause, details: { restartedAt: at, from: kept.from, kept: false } },
      ),
    );
  };
  appender
    .prepare(entry, "the snapshot entry of the state kept over a purge")
    .then((prepared) => appender.appendConditional(prepared, at, { timeoutMs: 30_000 }))
    .then((outcome) => {
      if (outcome.kind === "conflict") lost(`another entry came first (latest ${outcome.latest})`);
    })
    .catch((e: unknown) => {
      if (!isStateSyncError(e, "CLOSED")) lost(e instanceof Error ? e.message : String(e), e);
    });
}
