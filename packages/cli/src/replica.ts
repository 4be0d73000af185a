/**
 * A short-lived replica for the commands that need the model (state, verify, compact, export):
 * the engine itself replays the log (`createSynchronizer` over the command's `JetStreamLog`; no
 * second replay here), with no local snapshots, no automatic compaction and no following. It
 * never writes to the log by opening it: a model newer than the log does not switch it
 * (`upgrade: "manual"`: it reads the log's state migrated up; switching is `statesync migrate`'s
 * job), and an empty log (which opening would give a genesis entry) and a log whose first
 * retained entry is unusable (which opening would re-anchor with a snapshot entry) are refused
 * first.
 *
 * A replica always has read the whole log, up to the latest revision the log had when the
 * command started, or the command fails (`UNAVAILABLE`, saying how far it got): the engine's
 * `waitFor: "synced"` resolves with what it has read, status `offline`, when the server stops
 * answering during the catch-up, and `verify`, `export` and `state` used to report that part
 * of the log, exit 0 (a fresh-eyes trial froze the server with SIGSTOP: "result ok, replayed
 * revisions 1 to 783" of 20,001).
 */
import { randomBytes } from "node:crypto";
import {
  createSynchronizer,
  decodeEntry,
  firstRetainedEntry,
  StateSyncError,
  type CommandMap,
  type DecodeResult,
  type JetStreamLog,
  type LogInfo,
  type RevisionedLog,
  type StateSynchronizer,
} from "@statesync/node";
import type { AnyModel } from "./model-file.js";

/** A replica of any model. */
export type AnyReplica = StateSynchronizer<unknown, CommandMap<unknown>>;

/** A client id for entries this CLI writes (compaction, restore): `statesync-cli-<random>`. */
export function cliClientId(): string {
  return `statesync-cli-${randomBytes(4).toString("hex")}`;
}

/**
 * Why the first retained entry (at `revision`, `decoded` from its data; undefined when it could
 * not be read) cannot start a replay: it is neither a genesis nor a snapshot entry nor the first
 * part of a chunked snapshot (opening such a log with the SDK would write a snapshot entry of the
 * initial state into it). A `TRUNCATED` error when it is a readable update, command or intent
 * (the history before it was removed), `CORRUPT_ENTRY` otherwise, or undefined when it can.
 */
export function firstEntryProblem(
  revision: number,
  decoded: DecodeResult | undefined,
  contiguous = false,
): StateSyncError | undefined {
  const kind = decoded?.ok ? decoded.entry.kind : "malformed";
  // A chunked snapshot starts with its part 0 (docs/format.md, "Chunked snapshots").
  const start = decoded?.ok && decoded.entry.kind === "part" && decoded.entry.index === 0;
  if (kind === "genesis" || kind === "snapshot" || start) return undefined;
  // A readable update, command or intent first: the history before it was purged (an operator's
  // purge of the whole stream, then a live replica's write), and an opening replica stops at it
  // (`Replay.step`); only unreadable entries are skipped up to a re-anchoring (`FirstEntry`).
  // Before, `info` predicted the re-anchoring for both (fresh-eyes trial, stop 25).
  // The same code as an SDK replica's opening: TRUNCATED for history removed before a readable
  // entry (a trial saw CORRUPT_ENTRY here and TRUNCATED in the SDK for one log).
  // An SDK replica reads past such entries to a starting point after them (`Replay.readPast`):
  // `checkFirstEntry` looks for one before it reports this (a review, stop 36).
  // In a log of one state an entry at revision 1 had nothing before it: the log never had a
  // starting point (a stream created again under writers of the old one), and an opening
  // replica starts it again from the initial state (`Replay.neverStarted`).
  const purged =
    ["update", "command", "commands", "intent", "part"].includes(kind) &&
    !(contiguous && revision === 1);
  const opening = purged
    ? "the entries before it were purged or deleted, and no genesis, snapshot or switch entry or chunked snapshot follows: an SDK replica without a local snapshot fails TRUNCATED opening this log, until a replica that still holds the state writes it back (a compaction; docs/guarantees.md)"
    : "an SDK replica opening this log would start it again from the model's initial state";
  return new StateSyncError(
    purged ? "TRUNCATED" : "CORRUPT_ENTRY",
    `the first retained entry (revision ${revision}) is ${kind}, not a genesis or snapshot entry; ${opening}`,
    { details: { revision } },
  );
}

/**
 * Throws {@link firstEntryProblem} of the first retained entry of `log` (`firstRetainedEntry`,
 * core: nats-server 2.9.10 can report after purges a `first_seq` it cannot serve, and the CLI
 * used to call such a log corrupt although every replica reads it from the next entry).
 */
export async function checkFirstEntry(
  log: Pick<RevisionedLog, "entryAt" | "read" | "contiguous">,
  info: Pick<LogInfo, "firstRevision" | "latestRevision">,
): Promise<void> {
  const first = await firstRetainedEntry(log, info.firstRevision);
  // Nothing retained any more (a purge of the whole stream since `info`): said so, not
  // "malformed", which it used to call a first entry it could not read (a new user's trial).
  if (first === undefined) throw retainsNothing(info.latestRevision);
  const decoded = decodeEntry(first.data);
  const problem = firstEntryProblem(first.revision, decoded, log.contiguous);
  if (problem && decoded.ok && (await startAfter(log, first.revision))) {
    return; // a replica reads past the entries before it (a purge undone in part)
  }
  if (problem) throw problem;
}

/**
 * The `TRUNCATED` of a log that retains no entry, though it had entries up to `latest`: its
 * history was removed (an operator's purge of the whole stream).
 */
export function retainsNothing(latest: number): StateSyncError {
  return new StateSyncError(
    "TRUNCATED",
    `the log retains no entry: everything up to revision ${latest} was removed`,
    { details: { latest } },
  );
}

/**
 * Whether an entry a replay can start from lies after `revision`: read to the log's end, which
 * ends with the entry a compaction that overtook the read kept (`RevisionedLog.read`).
 */
async function startAfter(log: Pick<RevisionedLog, "read">, revision: number): Promise<boolean> {
  for await (const e of log.read(revision + 1, Number.POSITIVE_INFINITY)) {
    if (e.skipped) continue;
    if (firstEntryProblem(e.revision, decodeEntry(e.data)) === undefined) return true;
  }
  return false;
}

/**
 * Opens a replica of `model` caught up with the log, or returns undefined when the log never
 * held an entry (`TRUNCATED` when it retains none). `onError` hears the error events of the catch-up (skipped malformed entries, failed
 * commands). Throws what opening throws (`MODEL_MISMATCH`, `UNKNOWN_COMMAND`, `STREAM_CONFIG`,
 * ...).
 */
export async function openReplica(
  log: JetStreamLog,
  model: AnyModel,
  onError?: (error: StateSyncError) => void,
): Promise<AnyReplica | undefined> {
  const info = await log.info();
  if (info.latestRevision === 0) return undefined;
  if (info.firstRevision === 0) throw retainsNothing(info.latestRevision);
  await checkFirstEntry(log, info);
  const replica: AnyReplica = await createSynchronizer({
    log, // not owned: the command closes it
    model,
    snapshots: false,
    compaction: false,
    live: false,
    waitFor: "synced",
    upgrade: "manual",
    clientId: cliClientId(),
    onError,
  });
  if (replica.revision < info.latestRevision) {
    const status = replica.status;
    await replica.close();
    throw incompleteRead(replica.revision, info.latestRevision, status);
  }
  return replica;
}

/**
 * The `UNAVAILABLE` of a read that got to `revision` only, the log being at `latest` when the
 * command started (`details`: both): nothing is concluded from part of a log.
 */
export function incompleteRead(
  revision: number,
  latest: number,
  status?: string,
  cause?: StateSyncError,
): StateSyncError {
  const why = status === undefined ? "" : ` (replica ${status})`;
  const server = cause === undefined ? "" : ` (${cause.message})`;
  return new StateSyncError(
    "UNAVAILABLE",
    `read the log up to revision ${revision} of ${latest} only${why}: the server stopped answering within --timeout${server}; nothing is reported from part of the log`,
    { details: { revision, latest }, cause },
  );
}

/** Opens a replica (see {@link openReplica}), runs `use`, closes it. */
export async function withReplica<R>(
  log: JetStreamLog,
  model: AnyModel,
  use: (replica: AnyReplica | undefined) => Promise<R>,
  onError?: (error: StateSyncError) => void,
): Promise<R> {
  const replica = await openReplica(log, model, onError);
  try {
    return await use(replica);
  } finally {
    await replica?.close();
  }
}
