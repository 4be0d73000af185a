import { CompactionPolicy } from "../compaction-policy.js";
import type { RevisionedLog } from "../log.js";
import type { CommandMap, Model } from "../model.js";
import { noQueue, type PendingPart } from "../pending/pending-queue.js";
import { randomId } from "../prng.js";
import type { CreateSynchronizerOptions, SyncStats } from "../synchronizer-types.js";
import { Appender } from "./appender.js";
import { Compactor } from "./compactor.js";
import { ConfigWatch } from "./config-watch.js";
import { writeBackOverReset, writeBackWhenPurged } from "./log-changes.js";
import { Contention } from "./contention.js";
import { Opener } from "./opener.js";
import { OwnEntries } from "./own-entries.js";
import { Reader } from "./reader.js";
import { RecipeRunner } from "./recipes.js";
import { Replica } from "./replica.js";
import { Snapshots } from "./snapshots.js";
import type { StatusHub } from "./status.js";
import { Upgrader } from "./upgrader.js";
import { Writer } from "./writer.js";

/** The parts of one replica that the facade (`synchronizer.ts`) forwards its API to. */
export interface Parts<S, C extends CommandMap<S>> {
  readonly log: RevisionedLog;
  readonly model: Model<S, C>;
  readonly clientId: string;
  readonly replica: Replica<S, C>;
  readonly reader: Reader<S, C>;
  readonly opener: Opener<S, C>;
  readonly snapshots: Snapshots<S, C>;
  readonly writer: Writer<S, C>;
  readonly compactor: Compactor<S, C>;
  readonly upgrader: Upgrader<S, C>;
  readonly offline: PendingPart<S, C>;
  /** Stops listening to the connection's failed attempts (`connectionErrors`). */
  readonly unwatchConnection: (() => void) | undefined;
}

/**
 * Builds the parts of a replica from its options and wires them to one another and to `status`
 * (the map: packages/core/README.md). Nothing is started: `Synchronizer.start` does that.
 */
export function wireParts<S, C extends CommandMap<S>>(
  options: CreateSynchronizerOptions<S, C>,
  status: StatusHub,
  stats: SyncStats,
): Parts<S, C> {
  const log = options.log;
  const model = options.model;
  const clientId = options.clientId ?? randomId(8);
  const own = new OwnEntries();
  const replica = new Replica(model, log.contiguous, status, stats, own);
  const reader = new Reader(log, replica, status);
  const snapshots = new Snapshots(
    options.snapshots || undefined,
    options.snapshotKey ?? model.name,
    options.snapshotEvery ?? 100,
    model,
    replica,
    status,
    stats,
  );
  const appender = new Appender(log, own, replica, status, stats, clientId, () =>
    reader.untilReleased(),
  );
  const live = options.live ?? true;
  const config = new ConfigWatch(log, status, options.streamCheckIntervalMs ?? 45_000);
  const opener = new Opener(
    log,
    model,
    clientId,
    live,
    replica,
    reader,
    snapshots,
    appender,
    status,
    config,
  );
  const contention = new Contention(
    options.contention ?? "retry",
    clientId,
    replica,
    reader,
    appender,
    status,
  );
  const recipes = new RecipeRunner(model);
  const upgrader = new Upgrader(
    options.upgrade ?? "on-open",
    model,
    clientId,
    replica,
    reader,
    opener,
    appender,
    contention,
    status,
  );
  const writer = new Writer({
    log,
    clientId,
    replica,
    reader,
    opener,
    appender,
    contention,
    recipes,
    upgrader,
    status,
    groupCommands: options.groupCommands ?? true,
  });
  const logIdentities = {
    known: () => snapshots.logIdentity,
    restored: () => snapshots.restoredIdentity,
    read: async () => (await log.info()).identity,
  };
  const parts = { model, clientId, replica, writer, reader, status, logIdentities };
  const offline = options.pending
    ? options.pending.create({ ...parts, order: options.pending.order })
    : noQueue(replica, status);
  const policy =
    options.compaction === false ? undefined : new CompactionPolicy(options.compaction);
  const compactor = new Compactor(
    log,
    model,
    clientId,
    policy,
    replica,
    reader,
    opener,
    writer,
    appender,
    contention,
    status,
    stats,
  );
  if (options.onError) status.on("error", options.onError);
  if (options.onStatus) status.on("status", options.onStatus);
  const unwatchConnection = options.connectionErrors?.((error) => {
    if (status.closed) return;
    opener.connectionFailedOnce();
    status.report(error);
  });
  opener.compactPurged = () => compactor.compact();
  // A replica that compacts writes the state back after a purge of its whole stream under it
  // (a key of a shared stream purged starts again from a new genesis entry instead).
  // And the state a replica without one reset, opening the emptied log first (replay-state.ts).
  if (policy && log.contiguous) {
    config.onChecked = writeBackWhenPurged(log, replica, () => compactor.compact(), status);
    replica.onApplied(({ results }) => {
      for (const result of results) {
        if (result.kind !== "applied" || !result.kept) continue;
        snapshots.keptOverPurge = false; // this write-back replaces the compaction's
        if (!status.stopped) writeBackOverReset(result.kept, clientId, appender, status);
      }
    });
  }
  return {
    ...{ log, model, clientId, replica, reader, opener, snapshots, writer },
    ...{ compactor, upgrader, offline, unwatchConnection },
  };
}
