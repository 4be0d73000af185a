/**
 * The decoded entry types of the wire format (`entry.ts` has the format, its schema and its
 * checks), written out rather than inferred from the schema: they are part of the public API
 * (`decodeEntry`), and a declaration inferred from a zod schema names zod's generic types, whose
 * arity differs between the zod versions statesync accepts (3.25's v4, 4.0, 4.x). The schema is
 * checked against them (`entrySchema: z.ZodType<Entry>`).
 */
export interface EntryBase {
  /** Format version. */
  v: 1 | 2;
  /** Writer's timestamp, ms since the epoch. */
  ts: number;
  /** Writer's client id. */
  client: string;
}
/** An Immer patch as stored. */
export interface StoredPatch {
  op: "add" | "remove" | "replace";
  path: Array<string | number>;
  value?: unknown;
}
/**
 * `[origin, seq]`: the identity of a pending update (docs/offline.md), fixed when it was queued;
 * replicas skip an entry whose `(origin, seq)` they applied (format 2).
 */
export type EntryOrigin = [string, number];
/** `[origin, seq, revision]`: one row of the table of applied origins (`pending/origins.ts`). */
export type OriginRow = [string, number, number];
/** `[messageId, revision, timestamp]` of an entry before a snapshot or switch entry. */
export type RecentEntry = [string, number, number];
/** The first entry of a log: the model that created it. */
export interface GenesisEntry extends EntryBase {
  kind: "genesis";
  model: string;
  version: number;
  initialHash: string;
}
/** A conditional update: its patches, the revision it was based on, the commands it ran. */
export interface UpdateEntry extends EntryBase {
  kind: "update";
  base: number;
  seed: number;
  patches: StoredPatch[];
  commands?: Array<{ name: string; args: unknown }> | undefined;
  /** The queued updates' identity (the highest seq of the batch); written as format 2. */
  origin?: EntryOrigin | undefined;
}
/** The whole state at `base`, written by compaction (or a restore). */
export interface SnapshotEntry extends EntryBase {
  kind: "snapshot";
  base: number;
  model: string;
  version: number;
  initialHash: string;
  state: unknown;
  recent?: RecentEntry[] | undefined;
  /** The version the log was at before its last switch, when it switched (format 2 SDKs). */
  from?: number | undefined;
  /** The table of applied origins at `base` (format 2 SDKs; absent: empty). */
  origins?: OriginRow[] | undefined;
}
/**
 * Where a chunked snapshot entry's state is: `count` part entries `{ id, index }` (index 0 to
 * `count - 1`) before it, whose `data` joined is the state's JSON text: `bytes` bytes of UTF-8
 * with SHA-256 `sha256` (64 lowercase hex digits).
 */
export interface SnapshotParts {
  id: string;
  count: number;
  bytes: number;
  sha256: string;
}
/**
 * A snapshot too large for one entry (format 2, docs/format.md): the state at `base` is in the
 * part entries `parts` names, which lie after `base` and before this entry; the state at this
 * entry is that state with every entry between `base` and this one applied.
 */
export interface ChunkedSnapshotEntry extends EntryBase {
  v: 2;
  kind: "snapshot";
  base: number;
  model: string;
  version: number;
  initialHash: string;
  parts: SnapshotParts;
  recent?: RecentEntry[] | undefined;
  /** The version the log was at before its last switch, when it switched. */
  from?: number | undefined;
  /** The table of applied origins at `base` (absent: empty). */
  origins?: OriginRow[] | undefined;
}
/**
 * One slice of a chunked snapshot's JSON text (written as format 1: a no-op an older SDK skips).
 * `base` is the revision whose state it holds; the part with index 0 is appended conditionally
 * on it (its `data` may be empty).
 */
export interface PartEntry extends EntryBase {
  kind: "part";
  id: string;
  index: number;
  base: number;
  data: string;
  /**
   * On part 0: the message ids of the entries before `base`, like a snapshot entry's, so that a
   * writer whose acknowledgement was lost finds its entry after a truncation before this part.
   */
  recent?: RecentEntry[] | undefined;
}
/**
 * An unconditional update: a named command and its arguments. Format 3 (`v: 3`, what this SDK
 * writes): every replica checks the command's result against the model's schema, and a result
 * that fails it makes the entry a no-op; formats 1 and 2: applied unchecked.
 */
export interface CommandEntry extends Omit<EntryBase, "v"> {
  /** Format version: 3 (checked) or an older, unchecked one. */
  v: 1 | 2 | 3;
  kind: "command";
  seed: number;
  name: string;
  args: unknown;
  /** The writer's model version (absent: a writer of the version before the last switch). */
  mv?: number | undefined;
  /** The queued command's identity; written as format 2. */
  origin?: EntryOrigin | undefined;
}
/** One command of a {@link CommandsEntry}: its own seed, name and arguments. */
export interface GroupedCommand {
  seed: number;
  name: string;
  args: unknown;
}
/**
 * Several unconditional commands in one entry (format 4, docs/format.md): commands a writer had
 * in flight together, appended once. Every replica applies them in order, each as a checked
 * command of its own (a format-3 `command` entry with this entry's `ts`, `client` and `mv`):
 * one that throws or leaves a state that fails the model is a `COMMAND_FAILED` no-op, and the
 * others apply.
 */
export interface CommandsEntry extends Omit<EntryBase, "v"> {
  v: 4;
  kind: "commands";
  /** 2 to 1,024 commands (`MAX_COMMANDS_PER_ENTRY`), applied in this order. */
  commands: GroupedCommand[];
  /** The writer's model version (absent: a writer of the version before the last switch). */
  mv?: number | undefined;
}
/** A no-op a writer that keeps losing races appends to go first. */
export interface IntentEntry extends EntryBase {
  kind: "intent";
}
/** The log switches to a newer model version, carrying the migrated state (format 2). */
export interface SwitchEntry extends EntryBase {
  v: 2;
  kind: "switch";
  /** The revision the switch is based on (written conditionally on it). */
  base: number;
  model: string;
  /** The model version the log was at. */
  from: number;
  /** The model version from this entry on, and its initial state's hash. */
  version: number;
  initialHash: string;
  /** The state at `base` migrated to `version`. */
  state: unknown;
  recent?: RecentEntry[] | undefined;
  /** The table of applied origins at `base` (absent: empty). */
  origins?: OriginRow[] | undefined;
}
/** A decoded entry. */
export type Entry =
  | GenesisEntry
  | UpdateEntry
  | SnapshotEntry
  | ChunkedSnapshotEntry
  | PartEntry
  | CommandEntry
  | CommandsEntry
  | IntentEntry
  | SwitchEntry;
