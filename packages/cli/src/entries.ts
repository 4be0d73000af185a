/**
 * One log entry as `history` and `tail` show it, decoded with the core's own `decodeEntry`, so
 * an entry every replica skips as malformed is shown as such (with the reason), never a crash.
 */
import {
  decodeEntry,
  StateSyncError,
  type Entry,
  type LogEntry,
  type StoredPatch,
} from "@statesync/node";
import { formatRow, isoTime, shortJson, type Column } from "./output.js";
import type { ReplayMark } from "./verdicts.js";

/** A summary of one entry (the `--json` shape of `history` and `tail`). */
export interface EntryRow {
  /** Revision (stream sequence). */
  readonly revision: number;
  /**
   * Writer's time, ISO 8601; its ms as decimal digits when no date can represent it (the envelope
   * takes any integer up to 2^53 − 1, dates end at 8.64e15 ms); null for a malformed entry.
   */
  readonly time: string | null;
  /** Writer's client id; null for a malformed entry. */
  readonly client: string | null;
  /**
   * `genesis`, `update`, `command`, `snapshot`, `part` (a slice of a chunked snapshot's state),
   * `intent`, `switch`, `malformed`, or `used-up` (a sequence the server used up for a publish it
   * refused: no entry, every replica steps over it; docs/servers.md).
   */
  readonly kind: Entry["kind"] | "malformed" | "used-up";
  /** Commands the entry ran: an unconditional command, or those of a conditional update. */
  readonly commands: ReadonlyArray<{ readonly name: string; readonly args: unknown }>;
  /** A conditional update's patches: how many and their paths (`/a/0/b`). */
  readonly patches?: { readonly count: number; readonly paths: readonly string[] };
  /** The revision a conditional update or a snapshot entry is based on. */
  readonly base?: number;
  /**
   * The model a genesis, snapshot or switch entry puts the log at (`from`: the version a switch
   * leaves; on a snapshot entry, the version before the log's last switch, when it records it).
   */
  readonly model?: { readonly name: string; readonly version: number; readonly from?: number };
  /**
   * A chunked snapshot entry: the id of its parts, how many, and the bytes of its state's JSON;
   * a part: the id and index (`count` absent).
   */
  readonly parts?: {
    readonly id: string;
    readonly count?: number;
    readonly index?: number;
    readonly bytes: number;
  };
  /** The model version of a command's writer (`mv`), when the writer recorded it. */
  readonly modelVersion?: number;
  /** Why a malformed entry is (`CODE: message`). */
  readonly error?: string;
  /**
   * With `--model`: what the engine's replay does with it when it does not apply it (skips it,
   * makes a no-op of it, stops at it, or stopped before it), and why; absent when it applies.
   */
  readonly replay?: ReplayMark;
  /** The message id it was appended with; null when none. */
  readonly messageId: string | null;
  /** Size of the entry, bytes. */
  readonly bytes: number;
}

const pathOf = (p: StoredPatch) => `/${p.path.join("/")}`;

/** Summarizes a stored entry (`replay`: what the replay of `--model` did with it, if marked). */
export function entryRow(e: LogEntry, replay?: ReplayMark): EntryRow {
  const common = {
    revision: e.revision,
    messageId: e.messageId ?? null,
    bytes: e.data.byteLength,
    ...(replay && { replay }),
  };
  // A sequence the server used up (LogEntry.skipped): every replica steps over it. Its own kind
  // (a trial: listed as `malformed`, while `info` counts no malformed entry).
  const decoded = e.skipped
    ? { ok: false as const, error: usedUp(e.revision) }
    : decodeEntry(e.data);
  if (!decoded.ok) {
    const { code, message } = decoded.error;
    return {
      ...common,
      time: null,
      client: null,
      kind: e.skipped ? "used-up" : "malformed",
      commands: [],
      error: `${code}: ${message}`,
    };
  }
  const x = decoded.entry;
  const row = { ...common, time: isoTime(x.ts), client: x.client, kind: x.kind };
  switch (x.kind) {
    case "update": {
      const paths = [...new Set(x.patches.map(pathOf))];
      return {
        ...row,
        commands: x.commands ?? [],
        patches: { count: x.patches.length, paths },
        base: x.base,
      };
    }
    case "command":
      return {
        ...row,
        commands: [{ name: x.name, args: x.args }],
        ...(x.mv !== undefined && { modelVersion: x.mv }),
      };
    case "commands":
      return {
        ...row,
        commands: x.commands.map((c) => ({ name: c.name, args: c.args })),
        ...(x.mv !== undefined && { modelVersion: x.mv }),
      };
    case "switch":
      return {
        ...row,
        commands: [],
        base: x.base,
        model: { name: x.model, version: x.version, from: x.from },
      };
    case "snapshot":
      return {
        ...row,
        commands: [],
        base: x.base,
        model: { name: x.model, version: x.version, ...(x.from !== undefined && { from: x.from }) },
        ...("parts" in x && {
          parts: { id: x.parts.id, count: x.parts.count, bytes: x.parts.bytes },
        }),
      };
    case "part":
      return {
        ...row,
        commands: [],
        base: x.base,
        parts: { id: x.id, index: x.index, bytes: new TextEncoder().encode(x.data).byteLength },
      };
    case "genesis":
      return { ...row, commands: [], model: { name: x.model, version: x.version } };
    default:
      return { ...row, commands: [] };
  }
}

const MARKS = {
  skipped: "skipped",
  "no-op": "no-op",
  restarts: "restarts (the state starts again)",
  stops: "stops",
  "may-stop": "may stop (replicas that check this state alone)",
  "not-replayed": "not replayed",
  partly: "some commands no-op",
} as const;

/** A replay mark in words, as the WHAT column brackets it: `skipped: CORRUPT_ENTRY: …`. */
export function markText(mark: ReplayMark): string {
  return `${MARKS[mark.verdict]}: ${mark.error}`;
}

/**
 * The WHAT column: {@link what}, after the replay's mark in brackets when it does not apply the
 * entry (`[skipped: VALIDATION: …] increment {"by":1e+308}`); a malformed entry's own reason
 * says it all.
 */
export function describe(row: EntryRow): string {
  const text = what(row);
  const r = row.replay;
  if (r === undefined || (row.kind === "malformed" && r.verdict === "skipped")) return text;
  return `[${markText(r)}]${text === "" ? "" : ` ${text}`}`;
}

/** What an entry does: commands and their arguments, patches, model, or why it is malformed. */
function what(row: EntryRow): string {
  const calls = row.commands.map((c) => `${c.name} ${shortJson(c.args, 60)}`.trim()).join("; ");
  switch (row.kind) {
    case "update": {
      const p = row.patches!;
      const paths = p.paths.slice(0, 4).join(" ") + (p.paths.length > 4 ? " …" : "");
      const patches = `${p.count} patch${p.count === 1 ? "" : "es"}${p.count > 0 ? `: ${paths}` : ""}`;
      return calls ? `${calls} (${patches})` : patches;
    }
    case "command":
    case "commands":
      return row.modelVersion === undefined ? calls : `${calls} (model v${row.modelVersion})`;
    case "switch":
      return `switch ${row.model!.name} v${row.model!.from} → v${row.model!.version} (migrated state at base ${row.base})`;
    case "snapshot":
      return row.parts === undefined
        ? `state at base ${row.base} (model ${row.model!.name} v${row.model!.version})`
        : `state at base ${row.base} in ${row.parts.count} parts ${row.parts.id}, ${row.parts.bytes} bytes (model ${row.model!.name} v${row.model!.version})`;
    case "part":
      return `part ${row.parts!.index} of ${row.parts!.id} (state at base ${row.base}), ${row.parts!.bytes} bytes`;
    case "genesis":
      return `model ${row.model!.name} v${row.model!.version}`;
    case "malformed":
    case "used-up":
      return row.error ?? "";
    default:
      return "";
  }
}

/** Table columns of `history` and `tail`; WHAT comes last, so `tail` can print as it goes. */
export const ENTRY_HEADER = ["REVISION", "TIME", "KIND", "CLIENT", "MESSAGE-ID", "BYTES", "WHAT"];

/**
 * The one layout of `history`'s and `tail`'s tables (WHAT, last, unpadded). Fixed, as `tail`
 * cannot know later rows: before, `history` sized its columns to their widest cells and `tail`
 * used these, so the same entries printed in other columns. REVISION, TIME (ISO 8601, 24),
 * KIND (`malformed`, 9) and BYTES are never cut (a wider one pushes the rest). CLIENT fits a
 * default client id (16 hex digits) and the CLI's own (`statesync-cli-` and 8); MESSAGE-ID the
 * ids those write (`<client>-<16 hex digits>-<counter>`: 44 holds the CLI's up to counter 9999;
 * before, 36, and the CLI's own compaction's id pushed BYTES and WHAT out of line). Longer
 * cells of these two are cut in the middle (`cutTo`: both ends stay); `--json` has them whole.
 */
export const ENTRY_COLUMNS: readonly Column[] = [
  { width: 8 },
  { width: 24 },
  { width: 9 },
  { width: 24, cut: true },
  { width: 44, cut: true },
  { width: 7 },
];

/** The table cells of a row. */
export function entryCells(row: EntryRow): string[] {
  return [
    String(row.revision),
    row.time ?? "-",
    row.kind,
    row.client ?? "-",
    row.messageId ?? "-",
    String(row.bytes),
    describe(row),
  ];
}

/** One line of the entry table (`ENTRY_HEADER` or a row's `entryCells`): `history` and `tail`. */
export function entryLine(cells: readonly string[]): string {
  return formatRow(cells, ENTRY_COLUMNS);
}

/** `history`'s table: the header, then a line per row, in `tail`'s columns. */
export function entryTable(rows: readonly EntryRow[]): string[] {
  return [entryLine(ENTRY_HEADER), ...rows.map((row) => entryLine(entryCells(row)))];
}

/** What a replica reports for a revision the log holds no entry at (`LogEntry.skipped`). */
function usedUp(revision: number): StateSyncError {
  return new StateSyncError(
    "SKIPPED_SEQUENCE",
    `no entry at revision ${revision}: the server used up the sequence for a publish it refused`,
  );
}
