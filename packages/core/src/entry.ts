import { z } from "zod/v4";
import { notA, StateSyncError } from "./errors.js";
import type { Entry } from "./entry-types.js";
import { storedJson } from "./json.js";
import { fastEnvelope } from "./entry-fast-path.js";
import {
  COMMANDS_FORMAT,
  MAX_COMMANDS_PER_ENTRY,
  MAX_NESTING_DEPTH,
  MAX_RECENT,
} from "./entry-limits.js";
import { hasProtoKey, jsonNestingDepth } from "./json-scan.js";
export { hasOwnProtoKey, hasProtoKey, jsonNestingDepth } from "./json-scan.js";

export {
  CHECKED_COMMAND_FORMAT,
  COMMANDS_FORMAT,
  MAX_COMMANDS_PER_ENTRY,
  MAX_NESTING_DEPTH,
  MAX_RECENT,
  MAX_STATE_DEPTH,
  WRITE_FORMAT,
} from "./entry-limits.js";
import { MAX_ORIGINS } from "./pending/origins.js";

export type {
  ChunkedSnapshotEntry,
  GroupedCommand,
  CommandEntry,
  CommandsEntry,
  Entry,
  EntryOrigin,
  OriginRow,
  GenesisEntry,
  IntentEntry,
  PartEntry,
  RecentEntry,
  SnapshotEntry,
  SnapshotParts,
  StoredPatch,
  SwitchEntry,
  UpdateEntry,
} from "./entry-types.js";

/**
 * The wire format of log entries (JSON, UTF-8). Version {@link FORMAT_VERSION}. The limits below
 * are part of the format: every replica rejects the same entries, whatever its stack size.
 *
 * - `genesis`: first entry of every state; names the model so a replica of another model refuses
 *   to open it.
 * - `update`: a conditional update: the Immer patches it produced (replayed exactly), the
 *   revision it was based on, and the commands it ran (informational, for history).
 * - `command`: an unconditional update: a named command and its arguments; every replica runs the
 *   command's recipe when it reaches the entry.
 * - `snapshot`: the whole state at `base`, written by compaction; a replica whose position was
 *   truncated away, or that starts fresh after a compaction, starts from it.
 * - `intent`: a no-op a conditional writer that keeps losing races appends unconditionally, so
 *   that the other writers let it go first (see `engine/contention.ts`). Clients before it skip
 *   it as `CORRUPT_ENTRY` (an error event, no effect on the state), so they still converge.
 * - `part` and the chunked `snapshot` (format 2, `parts` instead of `state`): a snapshot too large
 *   for one entry, its state's JSON text in slices (`chunked.ts`). A part is a no-op by itself
 *   (format 1: older clients skip it); the chunked snapshot entry is format 2 (they stop there).
 * - `switch` (format 2): the log switches to a newer model version; it carries the migrated state
 *   and is a starting point like a snapshot entry. Clients of format 1 stop before it
 *   (`UNSUPPORTED_FORMAT`); clients of an older model version stop with `MODEL_UPGRADED`.
 *
 * - `origin` (format 2) on `update` and `command` entries of queued updates: `[origin, seq]`,
 *   the update's identity (docs/offline.md); a replica skips a seq it applied for that origin.
 *   `origins` on `snapshot` (one-message and chunked) and `switch` entries: the table of applied
 *   origins at `base`.
 *
 * - format 3 changes the `command` entry only: a command entry of format 3 is checked where it is
 *   applied (a result that fails the model's schema or is not JSON makes it a `COMMAND_FAILED`
 *   no-op on every replica); clients of format 2 stop before it (`UNSUPPORTED_FORMAT`) rather
 *   than apply it unchecked. Command entries of formats 1 and 2 keep their unchecked semantics on
 *   every replica. No other kind is written or read as format 3.
 *
 * - format 4 adds the `commands` kind only: several unconditional commands in one entry, each
 *   applied as a checked command of its own (format 3's rule). Clients of format 3 stop before
 *   it. No other kind is written or read as format 4.
 *
 * docs/format.md says what each version of the SDK does with each kind. This version reads
 * formats 1 to 4 and writes format 1 for every kind format 1 has (so older clients keep reading
 * them) except `command` (format 3), format 2 only where an older client must stop, and format 4
 * for `commands` (unconditional commands in flight together).
 */
export const FORMAT_VERSION = 4;
/** Largest entry the format admits, in bytes (the log's own limit is usually lower). */
export const MAX_ENTRY_BYTES = 64 * 1024 * 1024;

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

const patchSchema = z.object({
  op: z.enum(["add", "remove", "replace"]),
  path: z.array(z.union([z.string(), z.number().int().nonnegative()])),
  value: z.unknown().optional(),
});

const commandCallSchema = z.object({ name: z.string().min(1).max(256), args: z.unknown() });

const common = {
  v: z.union([z.literal(1), z.literal(2)]),
  ts: z.number().int().nonnegative(),
  client: z.string().max(256),
};

const recentSchema = z
  .array(
    z.tuple([z.string().max(256), z.number().int().nonnegative(), z.number().int().nonnegative()]),
  )
  .max(MAX_RECENT)
  .optional();

/** Origins: 1-64 printable ASCII characters (see `PendingQueue.origin`). */
const originIdSchema = z.string().regex(/^[!-~]{1,64}$/);
const originSchema = z.tuple([originIdSchema, z.number().int().positive()]).optional();
const originsSchema = z
  .array(z.tuple([originIdSchema, z.number().int().positive(), z.number().int().nonnegative()]))
  .max(MAX_ORIGINS)
  .optional();

/**
 * Largest state text a chunked snapshot may declare, in bytes (under V8's longest string, so a
 * replica can join its parts); and most parts it may have.
 */
export const MAX_CHUNKED_BYTES = 500 * 1024 * 1024;
export const MAX_PARTS = 1_000_000;

const idSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);

/** A chunked snapshot entry (format 2): `parts` instead of `state`. */
const chunkedSnapshotSchema = z.object({
  ...common,
  v: z.literal(2),
  kind: z.literal("snapshot"),
  base: z.number().int().nonnegative(),
  model: z.string().min(1),
  version: z.number().int().nonnegative(),
  initialHash: z.string().regex(/^[0-9a-f]{64}$/),
  parts: z.object({
    id: idSchema,
    count: z.number().int().min(1).max(MAX_PARTS),
    bytes: z.number().int().min(1).max(MAX_CHUNKED_BYTES),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  }),
  /** Never with `parts`: an entry holding both is malformed. */
  state: z.undefined().optional(),
  recent: recentSchema,
  from: z.number().int().nonnegative().optional(),
  origins: originsSchema,
});

const kindSchema = z.discriminatedUnion("kind", [
  z.object({
    ...common,
    kind: z.literal("genesis"),
    model: z.string().min(1),
    version: z.number().int().nonnegative(),
    initialHash: z.string().regex(/^[0-9a-f]{64}$/),
  }),
  z.object({
    ...common,
    kind: z.literal("update"),
    base: z.number().int().nonnegative(),
    seed: z.number().int().nonnegative().max(0xffffffff),
    patches: z.array(patchSchema),
    commands: z.array(commandCallSchema).optional(),
    origin: originSchema,
  }),
  z.object({
    ...common,
    kind: z.literal("snapshot"),
    base: z.number().int().nonnegative(),
    model: z.string().min(1),
    version: z.number().int().nonnegative(),
    initialHash: z.string().regex(/^[0-9a-f]{64}$/),
    state: z.unknown(),
    recent: recentSchema,
    /** The version the log was at before its last switch (so commands without `mv` after it are read alike). */
    from: z.number().int().nonnegative().optional(),
    origins: originsSchema,
  }),
  z.object({
    ...common,
    /** 3: checked where it is applied (`CHECKED_COMMAND_FORMAT`); 1 and 2: unchecked. */
    v: z.union([z.literal(1), z.literal(2), z.literal(3)]),
    kind: z.literal("command"),
    seed: z.number().int().nonnegative().max(0xffffffff),
    name: z.string().min(1).max(256),
    args: z.unknown(),
    /** The writer's model version (absent: a writer of the version before the last switch). */
    mv: z.number().int().nonnegative().optional(),
    origin: originSchema,
  }),
  z.object({
    ...common,
    v: z.literal(COMMANDS_FORMAT),
    kind: z.literal("commands"),
    commands: z
      .array(
        z.object({
          seed: z.number().int().nonnegative().max(0xffffffff),
          name: z.string().min(1).max(256),
          args: z.unknown(),
        }),
      )
      .min(2)
      .max(MAX_COMMANDS_PER_ENTRY),
    mv: z.number().int().nonnegative().optional(),
  }),
  z.object({ ...common, kind: z.literal("intent") }),
  z.object({
    ...common,
    v: z.literal(2),
    kind: z.literal("switch"),
    /** The revision the switch is based on (written conditionally on it). */
    base: z.number().int().nonnegative(),
    model: z.string().min(1),
    /** The model version the log was at. */
    from: z.number().int().nonnegative(),
    /** The model version from this entry on, and its initial state's hash. */
    version: z.number().int().nonnegative(),
    initialHash: z.string().regex(/^[0-9a-f]{64}$/),
    /** The state at `base` migrated to `version`. */
    state: z.unknown(),
    recent: recentSchema,
    origins: originsSchema,
  }),
  z.object({
    ...common,
    kind: z.literal("part"),
    id: idSchema,
    index: z
      .number()
      .int()
      .nonnegative()
      .max(MAX_PARTS - 1),
    base: z.number().int().nonnegative(),
    data: z.string(),
    recent: recentSchema,
  }),
]);

const entrySchema: z.ZodType<Entry> = z.union([
  chunkedSnapshotSchema as z.ZodType<Entry>,
  kindSchema as z.ZodType<Entry>,
]);

/**
 * Why `raw` fails {@link entrySchema}, in one line: zod's first issues, with paths, in the branch
 * its `kind` and `parts` select (the union alone says "Invalid input", naming nothing).
 */
function envelopeProblem(raw: object): string {
  const branch = "parts" in raw ? chunkedSnapshotSchema : kindSchema;
  const parsed = branch.safeParse(raw);
  if (parsed.success) return "invalid envelope";
  const issues = parsed.error.issues;
  const words = issues.slice(0, 3).map((issue) => {
    const at = issue.path.length > 0 ? ` at ${issue.path.map(String).join(".")}` : "";
    return `${issue.message.replace(/\s+/g, " ")}${at}`;
  });
  const more = issues.length > 3 ? `; and ${issues.length - 3} more issues` : "";
  return `${words.join("; ")}${more}`.slice(0, 600);
}

/** Outcome of {@link decodeEntry}: an entry, or why not (CORRUPT_ENTRY / UNSUPPORTED_FORMAT). */
export type DecodeResult = { ok: true; entry: Entry } | { ok: false; error: StateSyncError };

const decoder = new TextDecoder("utf-8", { fatal: true });

function corrupt(reason: string, cause?: unknown): DecodeResult {
  return {
    ok: false,
    error: new StateSyncError("CORRUPT_ENTRY", `malformed entry: ${reason}`, { cause }),
  };
}

function forbiddenPath(entry: Entry): boolean {
  if (entry.kind !== "update") return false;
  return entry.patches.some((p) =>
    p.path.some((k) => typeof k === "string" && FORBIDDEN_KEYS.has(k)),
  );
}

/**
 * Decodes and validates an entry's envelope, in this order: size, fatal UTF-8, iterative depth
 * check, JSON.parse, format version, no `__proto__` key anywhere, zod envelope, patch paths.
 * Never throws for bytes (`VALIDATION` when `data` is no `Uint8Array`: a program's mistake).
 * Returns `UNSUPPORTED_FORMAT` for an object whose integer `v` is newer than this library's,
 * `CORRUPT_ENTRY` for anything else that fails.
 */
export function decodeEntry(data: Uint8Array): DecodeResult {
  if (!(data instanceof Uint8Array)) throw notA("decodeEntry", "data", "a Uint8Array", data);
  if (data.byteLength > MAX_ENTRY_BYTES) return corrupt(`${data.byteLength} bytes`);
  let text: string;
  try {
    text = decoder.decode(data);
  } catch (cause) {
    return corrupt("invalid UTF-8", cause);
  }
  return decodeEntryText(text, data.byteLength);
}

/**
 * {@link decodeEntry} of `text`, the text of an entry of `byteLength` bytes in UTF-8 (what the
 * bytes decode to, or the text they were encoded from): the same checks, the UTF-8 one aside.
 */
export function decodeEntryText(text: string, byteLength: number): DecodeResult {
  if (byteLength > MAX_ENTRY_BYTES) return corrupt(`${byteLength} bytes`);
  // Each level of nesting takes at least one character: a text this short cannot be too deep.
  if (text.length > MAX_NESTING_DEPTH && jsonNestingDepth(text, MAX_NESTING_DEPTH) < 0) {
    return corrupt(`nested deeper than ${MAX_NESTING_DEPTH}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (cause) {
    return corrupt("invalid JSON", cause);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    return corrupt("not an object");
  const v = (raw as { v?: unknown }).v;
  if (typeof v === "number" && Number.isInteger(v) && v > FORMAT_VERSION) {
    return {
      ok: false,
      error: new StateSyncError(
        "UNSUPPORTED_FORMAT",
        `entry format version ${v} is newer than this client's (${FORMAT_VERSION}); upgrade statesync`,
        { details: { version: v } },
      ),
    };
  }
  if (hasProtoKey(text, raw)) return corrupt("an object key is __proto__");
  return checkEnvelope(raw);
}

/**
 * The check {@link decodeEntry} applies, run on an entry this client built and `text`, its
 * `JSON.stringify`, without decoding the bytes again: what a reader parses from `text` is equal to
 * `entry` when every value in it is JSON (the writer checked its patches and arguments; numbers it
 * set are checked here), so the verdict is the same. Not for command entries whose arguments the
 * caller still holds (a later mutation would change the object, not the bytes).
 */
export function checkOwnEntry(entry: Entry, text: string, byteLength: number): DecodeResult {
  if (byteLength > MAX_ENTRY_BYTES) return corrupt(`${byteLength} bytes`);
  if (text.length > MAX_NESTING_DEPTH && jsonNestingDepth(text, MAX_NESTING_DEPTH) < 0) {
    return corrupt(`nested deeper than ${MAX_NESTING_DEPTH}`);
  }
  if (hasProtoKey(text, entry)) return corrupt("an object key is __proto__");
  return checkEnvelope(entry);
}

const entryEncoder = new TextEncoder();

/**
 * Encodes an entry built outside a synchronizer (JSON, UTF-8) and checks it as every reader
 * would: {@link checkOwnEntry} on what was built, or {@link decodeEntry} of the bytes for a
 * command entry. Returns the bytes to append. Throws `StateSyncError("VALIDATION")` naming the
 * problem when no replica would accept the entry. The engine's appender does the same and also
 * checks the log's size limit (`PAYLOAD_TOO_LARGE`), which the log checks again when appending.
 * For tools that write entries themselves (the `statesync import` command of `@statesync/cli`).
 */
export function encodeEntry(entry: Entry): Uint8Array {
  if (typeof entry !== "object" || entry === null) {
    throw notA("encodeEntry", "entry", "an object", entry);
  }
  const text = storedJson(entry, MAX_NESTING_DEPTH, "entry");
  const data = entryEncoder.encode(text);
  const checked =
    entry.kind === "command" || entry.kind === "commands"
      ? decodeEntry(data)
      : checkOwnEntry(entry, text, data.byteLength);
  if (!checked.ok) {
    throw new StateSyncError("VALIDATION", `entry cannot be stored: ${checked.error.message}`, {
      cause: checked.error,
    });
  }
  return data;
}

/**
 * Validates a parsed envelope. The hot kinds (`update`, `command`) that are plainly valid take a
 * hand-rolled path (zod costs several microseconds an entry); anything else, and anything the
 * fast path is unsure of, goes to zod, so both accept exactly the same inputs and yield the same
 * entries (`fast: false` forces zod; for tests).
 */
export function checkEnvelope(raw: object, fast = true): DecodeResult {
  if ((raw as { kind?: unknown }).kind === "snapshot" && "parts" in raw && "state" in raw) {
    return corrupt("a snapshot entry holds both state and parts");
  }
  let entry: Entry | undefined = fast ? fastEnvelope(raw as Record<string, unknown>) : undefined;
  if (entry === undefined) {
    const parsed = entrySchema.safeParse(raw);
    if (!parsed.success) return corrupt(envelopeProblem(raw), parsed.error);
    entry = parsed.data;
  }
  if (forbiddenPath(entry))
    return corrupt("patch path touches __proto__, constructor or prototype");
  return { ok: true, entry };
}
