/**
 * The reading behind `history()` and `stateAt()` (history.ts checks their arguments and loads
 * this on demand). Type imports only: the engine's functions come in as `HistoryDeps`.
 */
import type { Immutable } from "immer";
import type { DecodeResult } from "./entry.js";
import type { StateSyncError } from "./errors.js";
import type { HistoryDeps, HistoryEntry, HistoryOptions } from "./history.js";
import type { LogEntry, RevisionedLog } from "./log.js";
import type { CommandMap, Model } from "./model.js";
import type { Replay } from "./replay.js";

/** Reads a history or a state again at most this many times when a compaction overtook it. */
const MAX_OVERTAKEN = 4;

/**
 * Throws why `signal` aborted (the replica's `close()`: `CLOSED`), if it did. Checked after each
 * entry and each request: leaving a `for await` over `log.read` ends the read (its consumer).
 */
function stopIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason;
}

/** `readHistory` once its range is checked (see there). */
export async function listHistory(
  log: RevisionedLog,
  options: HistoryOptions,
  deps: HistoryDeps,
  signal?: AbortSignal,
): Promise<HistoryEntry[]> {
  for (let tries = 1; ; tries++) {
    const info = await log.info();
    stopIfAborted(signal);
    const from = Math.max(1, options.from ?? info.firstRevision);
    const to = Math.min(options.to ?? info.latestRevision, info.latestRevision);
    const out: HistoryEntry[] = [];
    for await (const e of log.read(from, to)) {
      stopIfAborted(signal);
      if (!e.skipped) out.push(historyEntry(e, deps.decodeEntry)); // no entry there: none listed
    }
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
        : x.kind === "commands"
          ? x.commands.map((c) => ({ name: c.name, args: c.args }))
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
      x.kind === "command" || x.kind === "commands"
        ? x.mv
        : x.kind === "genesis" || x.kind === "snapshot" || x.kind === "switch"
          ? x.version
          : undefined,
  };
}

const EMPTY = new Uint8Array(0);

/** An entry the replay holds as a no-op: what follows `revision` does not make its state. */
const HELD_NO_OP: DecodeResult = { ok: true, entry: { v: 1, kind: "intent", ts: 0, client: "" } };

/**
 * When `replay` stopped at `revision` while holding entries for a chunked snapshot (the log starts
 * with its parts: a compaction truncated before its part 0), reads on to the snapshot entry that
 * loads them, as a replica does: the state at `revision` is the state at the snapshot's `base`
 * with the entries held up to `revision` applied. What lies after `revision` is handed over as a
 * no-op, except the parts and chunked snapshot entries that complete the load (the collector
 * holds entries with a substitute decoding in the same way). Whether it loaded, or the stall that
 * stopped it.
 */
async function loadHeldParts<S, C extends CommandMap<S>>(
  log: RevisionedLog,
  replay: Replay<S, C>,
  revision: number,
  latest: number,
  deps: HistoryDeps,
  signal: AbortSignal | undefined,
): Promise<{ loaded: boolean; stall?: StateSyncError }> {
  if (replay.readPosition <= replay.revision || latest <= revision) return { loaded: false };
  for await (const e of log.read(revision + 1, latest)) {
    stopIfAborted(signal);
    const d = deps.decodeEntry(e.data);
    const x = d.ok ? d.entry : undefined;
    const loads = x?.kind === "part" || (x?.kind === "snapshot" && "parts" in x);
    const r = replay.step(loads ? e : { ...e, data: EMPTY }, loads ? d : HELD_NO_OP);
    if (r.kind === "stall") return { loaded: false, stall: r.error };
    if (replay.readPosition === replay.revision) return { loaded: replay.anchored };
  }
  return { loaded: false };
}

/** `rebuildStateAt` for a revision above 0 once it is checked (see there). */
export async function replayTo<S, C extends CommandMap<S>>(
  log: RevisionedLog,
  model: Model<S, C>,
  revision: number,
  deps: HistoryDeps,
  signal?: AbortSignal,
): Promise<Immutable<S>> {
  const { Replay } = deps;
  for (let tries = 1; ; tries++) {
    const info = await log.info();
    stopIfAborted(signal);
    if (revision > info.latestRevision) {
      throw new deps.StateSyncError(
        "VALIDATION",
        `revision ${revision} is past the latest (${info.latestRevision})`,
      );
    }
    const replay = new Replay(model, log.contiguous);
    // As a replica does: entries it cannot start from are read past to a starting point after
    // them (a review: `stateAt` refused the revision a replica stood on).
    replay.scanForStart = true;
    // Only the state at `revision` must migrate: the states on the way may fail to in passing
    // (docs/versions.md), and a switch entry on the way carries the migrated state.
    replay.checkMigrations = false;
    let stall: StateSyncError | undefined;
    for await (const e of log.read(1, revision)) {
      stopIfAborted(signal);
      const r = replay.step(e);
      if (r.kind === "stall") {
        stall = r.error;
        break;
      }
    }
    // Among the parts a log starts with: the replay holds what it read until their snapshot
    // entry (a fresh-eyes trial found `state --at` calling such a revision "before the retained
    // history", which `history` lists).
    const amongParts =
      stall === undefined &&
      replay.readPosition > replay.revision &&
      replay.unusableStart === undefined;
    const held = amongParts
      ? await loadHeldParts(log, replay, revision, info.latestRevision, deps, signal)
      : { loaded: false };
    stall ??= held.stall;
    // The revision whose state the replay holds (after a load, that of `revision`: the entries
    // after it were held as no-ops).
    const through = held.loaded ? revision : replay.revision;
    const reached = log.contiguous && stall === undefined && through === revision;
    const first = reached ? 0 : (await log.info()).firstRevision;
    const overtaken = first > info.firstRevision && first > through;
    if (overtaken && tries < MAX_OVERTAKEN) continue;
    if (stall && !overtaken) throw stall;
    if (overtaken || !replay.anchored || through === 0) {
      const firstRevision = overtaken ? first : info.firstRevision;
      const message =
        amongParts && !held.loaded && !overtaken
          ? `revision ${revision} lies among the parts of a chunked snapshot that no valid snapshot entry after them completes: no replica has a state there`
          : `revision ${revision} is before the retained history (the first retained revision is ${firstRevision})`;
      throw new deps.StateSyncError("TRUNCATED", message, {
        details: { revision, firstRevision },
      });
    }
    return replay.answer() as Immutable<S>;
  }
}
