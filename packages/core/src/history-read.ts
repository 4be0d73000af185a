/**
 * The reading behind `history()` and `stateAt()` (history.ts checks their arguments and loads
 * this on demand). Type imports only: the engine's functions come in as `HistoryDeps`.
 */
import type { Immutable } from "immer";
import type { StateSyncError } from "./errors.js";
import type { HistoryDeps, HistoryEntry, HistoryOptions } from "./history.js";
import type { LogEntry, RevisionedLog } from "./log.js";
import type { CommandMap, Model } from "./model.js";

/** Reads a history or a state again at most this many times when a compaction overtook it. */
const MAX_OVERTAKEN = 4;

/** `readHistory` once its range is checked (see there). */
export async function listHistory(
  log: RevisionedLog,
  options: HistoryOptions,
  deps: HistoryDeps,
): Promise<HistoryEntry[]> {
  for (let tries = 1; ; tries++) {
    const info = await log.info();
    const from = Math.max(1, options.from ?? info.firstRevision);
    const to = Math.min(options.to ?? info.latestRevision, info.latestRevision);
    const out: HistoryEntry[] = [];
    for await (const e of log.read(from, to)) out.push(historyEntry(e, deps.decodeEntry));
    const first = (await log.info()).firstRevision;
    const kept = out.filter((e) => e.revision >= first);
    if (kept.length === out.length || tries >= MAX_OVERTAKEN) return kept;
  }
}

function historyEntry(e: LogEntry, decodeEntry: HistoryDeps["decodeEntry"]): HistoryEntry {
  const d = decodeEntry(e.data);
  const base = { revision: e.revision, messageId: e.messageId, bytes: e.data.byteLength };
  if (!d.ok) {
    return {
      ...base,
      kind: "malformed",
      timestamp: undefined,
      command: undefined,
      args: undefined,
      commands: [],
      clientId: undefined,
      modelVersion: undefined,
    };
  }
  const x = d.entry;
  const commands =
    x.kind === "update"
      ? (x.commands ?? [])
      : x.kind === "command"
        ? [{ name: x.name, args: x.args }]
        : [];
  return {
    ...base,
    kind: x.kind,
    timestamp: x.ts,
    command: commands[0]?.name,
    args: commands[0]?.args,
    commands,
    clientId: x.client,
    modelVersion:
      x.kind === "command"
        ? x.mv
        : x.kind === "genesis" || x.kind === "snapshot" || x.kind === "switch"
          ? x.version
          : undefined,
  };
}

/** `rebuildStateAt` for a revision above 0 once it is checked (see there). */
export async function replayTo<S, C extends CommandMap<S>>(
  log: RevisionedLog,
  model: Model<S, C>,
  revision: number,
  deps: HistoryDeps,
): Promise<Immutable<S>> {
  const { Replay } = deps;
  for (let tries = 1; ; tries++) {
    const info = await log.info();
    if (revision > info.latestRevision) {
      throw new deps.StateSyncError(
        "VALIDATION",
        `revision ${revision} is past the latest (${info.latestRevision})`,
      );
    }
    const replay = new Replay(model, log.contiguous);
    let stall: StateSyncError | undefined;
    for await (const e of log.read(1, revision)) {
      const r = replay.step(e);
      if (r.kind === "stall") {
        stall = r.error;
        break;
      }
    }
    const reached = log.contiguous && stall === undefined && replay.revision === revision;
    const first = reached ? 0 : (await log.info()).firstRevision;
    const overtaken = first > info.firstRevision && first > replay.revision;
    if (overtaken && tries < MAX_OVERTAKEN) continue;
    if (stall && !overtaken) throw stall;
    if (overtaken || !replay.anchored || replay.revision === 0) {
      throw new deps.StateSyncError(
        "TRUNCATED",
        `revision ${revision} is before the retained history`,
        {
          details: { revision, firstRevision: overtaken ? first : info.firstRevision },
        },
      );
    }
    return replay.state as Immutable<S>;
  }
}
