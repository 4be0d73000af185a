/** Constants of the entry format that both `entry.ts` and its fast path use (docs/format.md). */

/** Deepest nesting of arrays and objects in an entry's JSON text (a reader refuses deeper). */
export const MAX_NESTING_DEPTH = 256;

/**
 * Deepest nesting of arrays and objects a state may have to cross every boundary (docs/format.md,
 * "Limits"): a snapshot or switch entry holds the state one level down, so it nests one level
 * less than {@link MAX_NESTING_DEPTH}. Counted as the entry's text counts it: a number or string
 * is 0 levels, `{}` and `[]` 1, `{ "a": [] }` 2. Compaction, the model switch, local snapshots and
 * the CLI's export and import refuse a state deeper than this; conditional updates never make one.
 */
export const MAX_STATE_DEPTH = MAX_NESTING_DEPTH - 1;

/**
 * Deepest value one patch of an update entry may write: the entry holds it three levels down
 * (`{ "patches": [ { "value": … } ] }`), so it nests three levels less than
 * {@link MAX_NESTING_DEPTH}. A conditional update writing a deeper value is refused by its writer
 * (docs/format.md, "Limits"), whatever the depth of the state it makes.
 */
export const MAX_PATCH_VALUE_DEPTH = MAX_NESTING_DEPTH - 3;

/**
 * Deepest arguments of a command queued for a conditional update: its update entry holds them
 * three levels down (`{ "commands": [ { "args": … } ] }`), like a patch's value.
 */
export const MAX_UPDATE_ARGS_DEPTH = MAX_NESTING_DEPTH - 3;

/** Deepest arguments of an unconditional command: its entry holds them one level down. */
export const MAX_COMMAND_ARGS_DEPTH = MAX_NESTING_DEPTH - 1;

/** The format of the kinds format 1 already had: what this SDK writes for them. */
export const WRITE_FORMAT = 1;

/**
 * The format of a `command` entry whose result every replica checks against the model's schema
 * (docs/format.md, format 3): a command whose result fails it is a `COMMAND_FAILED` no-op. SDKs
 * of format 2 stop before such an entry (`UNSUPPORTED_FORMAT`) instead of applying it
 * unchecked; command entries of formats 1 and 2 are applied unchecked by every SDK.
 */
export const CHECKED_COMMAND_FORMAT = 3;

/**
 * The format of a `commands` entry: several unconditional commands appended together, each
 * applied as a checked command (docs/format.md, format 4). SDKs of format 3 stop before it.
 */
export const COMMANDS_FORMAT = 4;

/** Most commands one `commands` entry holds (readers refuse more as `CORRUPT_ENTRY`). */
export const MAX_COMMANDS_PER_ENTRY = 1_024;

/**
 * A snapshot entry lists the message ids of the last entries before it, as
 * `[messageId, revision, timestamp]`, oldest first, at most this many (by count: the timestamp is
 * the writer's and is not used). A writer whose acknowledgement was lost and whose entry was
 * truncated away by a compaction finds it there instead of in the log (engine/own-lookup.ts).
 */
export const MAX_RECENT = 4_000;
