import type { GenesisEntry, SnapshotEntry } from "../entry.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import type { RevisionedLog } from "../log.js";
import type { CommandMap, Model } from "../model.js";
import { randomId } from "../prng.js";
import type { Appender } from "./appender.js";
import type { Reader } from "./reader.js";
import type { StatusHub } from "./status.js";

/**
 * The entry a replica first stands on, written by the opener when the log has none: the genesis
 * entry of an empty log, or a snapshot entry of the model's initial state on a log whose first
 * entries no reader can use. Both are appended conditionally, so one replica wins and the others
 * read its entry.
 */
export class FirstEntry<S, C extends CommandMap<S>> {
  constructor(
    private readonly log: RevisionedLog,
    private readonly model: Model<S, C>,
    private readonly clientId: string,
    private readonly reader: Reader<S, C>,
    private readonly appender: Appender,
    private readonly status: StatusHub,
  ) {}

  /** Appends the genesis entry at revision 0 (or reads the one that won); its revision. */
  async appendGenesis(): Promise<number> {
    const entry: GenesisEntry = {
      v: 1,
      kind: "genesis",
      ts: Date.now(),
      client: this.clientId,
      model: this.model.name,
      version: this.model.version,
      initialHash: this.model.initialHash,
    };
    const { data } = await this.appender.prepare(entry, "the genesis entry");
    const id = `genesis-${this.model.name}-${this.model.version}-${this.model.initialHash.slice(0, 16)}`;
    try {
      const stored = await this.log.appendConditional(data, 0, id);
      if (!stored.duplicate || (await this.log.entryAt(stored.revision)) !== undefined) {
        return stored.revision;
      }
      // The server still remembers a genesis that was purged since (a key of a shared stream
      // purged within the duplicate window: reopening it failed TRUNCATED, found by a fresh-eyes
      // trial). Write a new one; the condition still lets only one opener win.
      return (await this.log.appendConditional(data, 0, `${id}-${randomId(8)}`)).revision;
    } catch (e) {
      if (!isStateSyncError(e, "CONFLICT")) throw e;
      return (await this.log.info()).latestRevision;
    }
  }

  /**
   * The log holds entries but none a replica can stand on: its first entry is unusable (an older
   * client with a clock before 1970 wrote a genesis every reader refuses, say), so no replica
   * could ever write to it (issue 10, case 10). The way forward, taken by whichever replica
   * gets there first: a snapshot entry of the model's initial state, appended only if the log is
   * still at `latest` (one wins; the others read it), which every replica then starts from.
   * Reported as a `CORRUPT_ENTRY` event so that the repair is seen.
   */
  async reanchor(latest: number, emptied = false): Promise<void> {
    // An emptied log (an operator purged the whole stream) is history removed, not a corrupt
    // entry: reported as TRUNCATED (a trial found CORRUPT_ENTRY alarming for it).
    this.status.report(
      emptied
        ? new StateSyncError(
            "TRUNCATED",
            `the log retains no entries up to revision ${latest} (its stream was purged); starting it again from the model's initial state with a snapshot entry (a replica that held the state writes it back over it)`,
            { details: { latest, emptied: true } },
          )
        : new StateSyncError(
            "CORRUPT_ENTRY",
            `the log's entries up to revision ${latest} hold no usable genesis or snapshot entry; starting it again from the model's initial state with a snapshot entry`,
            { details: { latest } },
          ),
    );
    const entry: SnapshotEntry = {
      v: 1,
      kind: "snapshot",
      base: latest,
      ts: Date.now(),
      client: this.clientId,
      model: this.model.name,
      version: this.model.version,
      initialHash: this.model.initialHash,
      state: this.model.initial,
    };
    const prepared = await this.appender.prepare(entry, "the snapshot entry of the initial state");
    const outcome = await this.appender.appendConditional(prepared, latest, { timeoutMs: 30_000 });
    const target = outcome.kind === "committed" ? outcome.entry.revision : outcome.latest;
    await this.reader.readRange(target ?? (await this.log.info()).latestRevision);
    if (this.status.stallReason) throw this.status.stallReason;
  }
}

/** The opening of a log that has no starting point yet: tried again (`UNAVAILABLE`). */
export function notStartedYet(latest: number): StateSyncError {
  return new StateSyncError(
    "UNAVAILABLE",
    `the log holds no entry to start from up to revision ${latest}, and entries of other writers kept landing before the one that starts it again: opening again`,
  );
}

/**
 * `UNAVAILABLE` of a wait for the replica to stand on the log (`Opener.anchor`) that gave up:
 * nothing was appended, after waiting since `started` (ms since the epoch). It names `lasting` (a
 * problem that lasts until the setup changes, its `details` kept), else why the replica is not
 * live (`status.notLiveBecause`: the connection's last failure, say), as its `cause` too.
 * Before, `fetchUpdates()` with the connection refused said only that the first entry "could not
 * be written or read yet" (a new user's trial).
 */
export function notOnLogYet(
  started: number,
  replica: { readonly anchored: boolean },
  lasting: StateSyncError | undefined,
  status: { readonly notLiveBecause: StateSyncError | undefined },
): StateSyncError {
  const reason = lasting ?? status.notLiveBecause;
  const waitedMs = Date.now() - started;
  const what = replica.anchored
    ? "the restored snapshot could not be checked against the log yet"
    : "the log's first entry could not be written or read yet";
  return new StateSyncError(
    "UNAVAILABLE",
    `${what}; nothing was appended (waited ${waitedMs} ms)${reason ? `: ${reason.message}` : ""}`,
    { cause: reason, details: { ...lasting?.details, waitedMs } },
  );
}
