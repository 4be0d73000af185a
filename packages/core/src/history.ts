import type { Immutable } from "immer";
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
   * `genesis`, `update` (conditional), `command` (unconditional), `snapshot`, `intent` (a no-op
   * a writer that kept losing races appended to go first), `switch` (the log switched to a newer
   * model version, docs/versions.md), `part` (one slice of a chunked snapshot's state, written
   * by compaction before the snapshot entry naming it; docs/format.md), or `malformed`.
   */
  readonly kind:
    "genesis" | "update" | "command" | "snapshot" | "part" | "intent" | "switch" | "malformed";
  /** Command name: the unconditional command, or the first command of a conditional update. */
  readonly command: string | undefined;
  /** Its arguments. */
  readonly args: unknown;
  /** Every command a conditional update ran (queued local updates may share one entry). */
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

function checkRange(n: number | undefined, what: string): void {
  if (n !== undefined && (!Number.isSafeInteger(n) || n < 0)) {
    throw new StateSyncError("VALIDATION", `${what} must be a non-negative integer`);
  }
}

/** Lists the retained entries of `log` in `[from, to]`. */
export async function readHistory(
  log: RevisionedLog,
  options: HistoryOptions = {},
): Promise<HistoryEntry[]> {
  checkRange(options.from, "from");
  checkRange(options.to, "to");
  const info = await log.info();
  const from = Math.max(1, options.from ?? info.firstRevision);
  const to = Math.min(options.to ?? info.latestRevision, info.latestRevision);
  const out: HistoryEntry[] = [];
  for await (const e of log.read(from, to)) {
    const d = decodeEntry(e.data);
    const base = { revision: e.revision, messageId: e.messageId, bytes: e.data.byteLength };
    if (!d.ok) {
      out.push({
        ...base,
        kind: "malformed",
        timestamp: undefined,
        command: undefined,
        args: undefined,
        commands: [],
        clientId: undefined,
        modelVersion: undefined,
      });
      continue;
    }
    const x = d.entry;
    const commands =
      x.kind === "update"
        ? (x.commands ?? [])
        : x.kind === "command"
          ? [{ name: x.name, args: x.args }]
          : [];
    out.push({
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
    });
  }
  return out;
}

/**
 * Rebuilds the state at `revision` from the retained log: replays from the first retained entry
 * (genesis or a snapshot entry) up to `revision`. Throws `TRUNCATED` when `revision` is before the
 * retained history, `VALIDATION` when it is past the latest revision, and a stall error
 * (`UNKNOWN_COMMAND`, `UNSUPPORTED_FORMAT`, ...) when the replay cannot get there.
 */
export async function rebuildStateAt<S, C extends CommandMap<S>>(
  log: RevisionedLog,
  model: Model<S, C>,
  revision: number,
): Promise<Immutable<S>> {
  checkRange(revision, "revision");
  // Revision 0 (nothing consumed) is the model's initial state, whatever the log retains.
  if (revision === 0) return new Replay(model, log.contiguous).state as Immutable<S>;
  const info = await log.info();
  if (revision > info.latestRevision) {
    throw new StateSyncError(
      "VALIDATION",
      `revision ${revision} is past the latest (${info.latestRevision})`,
    );
  }
  const replay = new Replay(model, log.contiguous);
  for await (const e of log.read(1, revision)) {
    const r = replay.step(e);
    if (r.kind === "stall") throw r.error;
  }
  if (!replay.anchored || replay.revision === 0) {
    throw new StateSyncError("TRUNCATED", `revision ${revision} is before the retained history`, {
      details: { revision, firstRevision: info.firstRevision },
    });
  }
  return replay.state as Immutable<S>;
}
