/**
 * `history()` and `stateAt()` / `rebuildStateAt`: their types and argument checks. The reading
 * itself (history-read.ts) is loaded on demand: a page lists a history or rebuilds an old state
 * rarely, if ever, so a browser app does not load it when it opens (README, "Bundle size").
 * history-read.ts imports nothing at run time (what it needs from the engine comes in as
 * `HistoryDeps`): a bundler then puts it in a chunk of its own, and the code loaded at open
 * stays in one file instead of being split around what the two would share.
 */
import type { Immutable } from "immer";
import { parseHistoryOptions, parseRevision } from "./engine/call-args.js";
import { decodeEntry } from "./entry.js";
import { StateSyncError } from "./errors.js";
import type { RevisionedLog } from "./log.js";
import type { CommandMap, Model } from "./model.js";
import { Replay } from "./replay.js";

/** One retained log entry, as {@link StateSynchronizer.history} lists it. */
export interface HistoryEntry {
  /** Revision of the entry. */
  readonly revision: number;
  /** Writer's timestamp, ms since the epoch (undefined for a malformed entry). */
  readonly timestamp: number | undefined;
  /**
   * `genesis`, `update` (conditional), `command` (unconditional), `commands` (unconditional
   * commands a writer had in flight together, in one entry: format 4), `snapshot`, `intent` (a no-op
   * a writer that kept losing races appended to go first), `switch` (the log switched to a newer
   * model version, docs/versions.md), `part` (one slice of a chunked snapshot's state, written
   * by compaction before the snapshot entry naming it; docs/format.md), or `malformed`.
   */
  readonly kind:
    | "genesis"
    | "update"
    | "command"
    | "commands"
    | "snapshot"
    | "part"
    | "intent"
    | "switch"
    | "malformed";
  /** Command name: the unconditional command, or the first command of a conditional update or of a `commands` entry. */
  readonly command: string | undefined;
  /** Its arguments. */
  readonly args: unknown;
  /**
   * Every command a conditional update ran (queued local updates may share one entry), or every
   * command of a `commands` entry.
   */
  readonly commands: ReadonlyArray<{ readonly name: string; readonly args: unknown }>;
  /** Id of the writing client. */
  readonly clientId: string | undefined;
  /** The message id it was appended with. */
  readonly messageId: string | undefined;
  /** Size of the entry in bytes. */
  readonly bytes: number;
  /**
   * The model version the entry names: the version a genesis, snapshot or switch entry puts the
   * log at, or the version of a command's writer (`mv`; undefined when an older SDK wrote it).
   */
  readonly modelVersion?: number | undefined;
}

/** Options of `history`: an inclusive revision range (default: everything retained). */
export interface HistoryOptions {
  from?: number;
  to?: number;
}

/** What history-read.ts needs of the engine, handed in so that it imports nothing. */
export interface HistoryDeps {
  readonly decodeEntry: typeof decodeEntry;
  readonly Replay: typeof Replay;
  readonly StateSyncError: typeof StateSyncError;
}

const deps: HistoryDeps = { decodeEntry, Replay, StateSyncError };

/** history-read.ts; `UNAVAILABLE` when it cannot be loaded (the next call tries again). */
function loadRead(): Promise<typeof import("./history-read.js")> {
  return import("./history-read.js").catch((err: unknown) => {
    throw new StateSyncError(
      "UNAVAILABLE",
      `the history code could not be loaded (${String(err)})`,
      { cause: err },
    );
  });
}

/**
 * Lists the retained entries of `log` in `[from, to]`, as they were at one moment. A compaction
 * that truncates the log while it is read (a JetStream read pulls in batches) would leave a
 * listing of entries that are gone, with a hole where the rest was (issue 10, case 1: every
 * reading path survives a concurrent compaction). So the first retained revision is read again
 * afterwards: when it moved past entries listed, the listing is read again (the default `to`
 * then reaches the snapshot entry that replaced them), at most {@link MAX_OVERTAKEN} times, and
 * what is no longer retained is left out.
 *
 * Throws `VALIDATION` for options that are not `{ from?, to? }` (an unknown key, `null`), a
 * bound that is not a non-negative integer, or `from` after `to`, before reading anything. Once
 * `signal` aborts (a replica's close signal) the read stops at its next entry or request and
 * throws the signal's reason.
 */
export async function readHistory(
  log: RevisionedLog,
  options?: HistoryOptions,
  signal?: AbortSignal,
): Promise<HistoryEntry[]> {
  const range = parseHistoryOptions(options);
  const { listHistory } = await loadRead();
  return listHistory(log, range, deps, signal);
}

/**
 * Rebuilds the state at `revision` from the retained log: replays from the first retained entry
 * (genesis or a snapshot entry) up to `revision`; a revision among the parts of a chunked snapshot
 * the log starts with reads on to the snapshot entry that loads them (the state at its `base`,
 * with the entries up to `revision` applied). Throws `TRUNCATED` when `revision` is before the
 * retained history (or among parts that no valid snapshot entry completes), `VALIDATION` when it
 * is not a non-negative integer (`undefined` included: checked before anything is read) or past
 * the latest revision, and a stall error (`UNKNOWN_COMMAND`, `UNSUPPORTED_FORMAT`, ...)
 * when the replay cannot get there.
 *
 * A compaction that truncates the log while it is read can end the read early, leaving the
 * state of an earlier revision (issue 10, case 1). So the first retained revision is read again
 * afterwards: when it moved past where the replay stopped and the replay cannot show it reached
 * `revision` (in a log of one state, its last entry is `revision`), the state is rebuilt again
 * (at most {@link MAX_OVERTAKEN} times), then `TRUNCATED`: never the state of another revision.
 */
export function rebuildStateAt<S, C extends CommandMap<S>>(
  log: RevisionedLog,
  model: Model<S, C>,
  revision: number,
): Promise<Immutable<S>> {
  return stateAtRevision(log, model, revision, undefined);
}

/**
 * {@link rebuildStateAt} for a replica's `stateAt`: once `signal` aborts (the replica's close
 * signal) the replay stops at its next entry or request and throws the signal's reason.
 */
export async function stateAtRevision<S, C extends CommandMap<S>>(
  log: RevisionedLog,
  model: Model<S, C>,
  revision: number,
  signal: AbortSignal | undefined,
): Promise<Immutable<S>> {
  parseRevision(revision, "revision");
  // Revision 0 (nothing consumed) is the model's initial state, whatever the log retains.
  if (revision === 0) return new Replay(model, log.contiguous).state as Immutable<S>;
  const { replayTo } = await loadRead();
  return replayTo(log, model, revision, deps, signal);
}
