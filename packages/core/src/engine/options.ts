import { z } from "zod/v4";
import { StateSyncError } from "../errors.js";
import { MAX_COMMAND_ARGS_DEPTH, MAX_UPDATE_ARGS_DEPTH } from "../entry-limits.js";
import { findJsonProblemWithDepth } from "../json.js";
import { nestedDeeperThan } from "../nesting.js";
import type { RevisionedLog } from "../log.js";
import type { CommandDefinition, CommandMap, Model } from "../model.js";
import type { PendingQueueSetup } from "../pending/pending-queue.js";
import { isSnapshotStoreLike, type SnapshotStore } from "../snapshot-store.js";
import { safeParse } from "../schema-parse.js";

/** Default attempts of a conditional update before `RETRY_LIMIT`. */
export const DEFAULT_MAX_ATTEMPTS = 64;
/** Default time an append whose outcome is unknown is re-sent, ms. */
export const DEFAULT_OUTCOME_TIMEOUT_MS = 30_000;

// Every union and z.custom here carries its own message: zod's default for them is a bare
// "Invalid input", which names neither what the option accepts nor what to write.
const fn = z.custom<(...args: never[]) => unknown>(
  (v) => typeof v === "function",
  "expected a function",
);

/** zod schema of `createSynchronizer`'s options (the functions and ports checked by shape). */
export const optionsSchema = z.strictObject({
  log: z.custom<RevisionedLog>(
    (v) => typeof v === "object" && v !== null && typeof (v as RevisionedLog).read === "function",
    "log must be a RevisionedLog",
  ),
  model: z.custom<Model<unknown>>(
    (v) =>
      typeof v === "object" && v !== null && typeof (v as Model<unknown>).initialHash === "string",
    "model must come from defineModel()",
  ),
  snapshots: z
    .union(
      [
        z.literal(false),
        z.custom<SnapshotStore>(isSnapshotStoreLike, "snapshots must be a SnapshotStore or false"),
      ],
      { error: "snapshots must be a SnapshotStore, or false for none" },
    )
    .optional(),
  snapshotKey: z.string().min(1).optional(),
  snapshotEvery: z.number().int().nonnegative().optional(),
  // Message ids embed it and are capped at 256 bytes with the subject (JetStreamLog): keep it short.
  clientId: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces")
    .optional(),
  live: z.boolean().optional(),
  waitFor: z.enum(["synced", "restored"]).optional(),
  contention: z.enum(["retry", "turns"]).optional(),
  groupCommands: z.boolean().optional(),
  upgrade: z.enum(["on-open", "manual"]).optional(),
  compaction: z
    .union(
      [
        z.literal(false),
        z.strictObject({
          everyEntries: z.number().int().positive().optional(),
          everyBytes: z.number().int().positive().optional(),
          jitter: z.number().min(0).max(10).optional(),
        }),
      ],
      // zod's own word for a union is "Invalid input" (a trial gave `compaction: true`)
      { error: "expected false or { everyEntries?, everyBytes?, jitter? }" },
    )
    .optional(),
  ownsLog: z.boolean().optional(),
  pending: z
    .custom<PendingQueueSetup | false>(
      (v) =>
        v === false ||
        (typeof v === "object" &&
          v !== null &&
          typeof (v as PendingQueueSetup).create === "function"),
      "pending must be pendingQueue({ store, owner }) (from @statesync/core), or false",
    )
    .optional(),
  streamCheckIntervalMs: z.number().int().nonnegative().optional(),
  onClose: fn.optional(),
  onError: fn.optional(),
  onStatus: fn.optional(),
  connectionErrors: fn.optional(),
});

const updateOptionsSchema = z
  .strictObject({
    maxAttempts: z.number().int().positive().optional(),
    signal: z
      .custom<AbortSignal>(
        (v) => v === undefined || v instanceof AbortSignal,
        "signal must be an AbortSignal",
      )
      .optional(),
    outcomeTimeoutMs: z.number().positive().optional(),
  })
  .optional();

/** The options of one update, with defaults filled in. */
export interface ParsedUpdateOptions {
  readonly maxAttempts: number;
  readonly outcomeTimeoutMs: number;
  readonly signal: AbortSignal | undefined;
}

const DEFAULT_UPDATE_OPTIONS: ParsedUpdateOptions = {
  maxAttempts: DEFAULT_MAX_ATTEMPTS,
  outcomeTimeoutMs: DEFAULT_OUTCOME_TIMEOUT_MS,
  signal: undefined,
};

/** `VALIDATION` naming `what` with zod's account of the problem. */
export function validation(what: string, error: z.ZodError): StateSyncError {
  return new StateSyncError("VALIDATION", `${what}: ${z.prettifyError(error)}`, { cause: error });
}

/** Validates the options of `update` / `updateUnconditionally` (throws `VALIDATION`). */
export function parseUpdateOptions(options: unknown): ParsedUpdateOptions {
  if (options === undefined) return DEFAULT_UPDATE_OPTIONS;
  const parsed = updateOptionsSchema.safeParse(options);
  if (!parsed.success) throw validation("invalid update options", parsed.error);
  return {
    maxAttempts: parsed.data?.maxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    outcomeTimeoutMs: parsed.data?.outcomeTimeoutMs ?? DEFAULT_OUTCOME_TIMEOUT_MS,
    signal: parsed.data?.signal,
  };
}

/**
 * Where a command's arguments travel: in an update entry (`update(name, args)`, a queued
 * update) or in a command entry of their own (`updateUnconditionally`).
 */
export type ArgsCarrier = "update" | "command";

/** How deep arguments may nest in each carrier, and how its entry is named in errors. */
const CARRIERS: Record<ArgsCarrier, { readonly maxDepth: number; readonly entry: string }> = {
  update: { maxDepth: MAX_UPDATE_ARGS_DEPTH, entry: "the entry of a conditional update" },
  command: { maxDepth: MAX_COMMAND_ARGS_DEPTH, entry: "an unconditional command's entry" },
};

/**
 * Looks a command up and validates its arguments: `UNKNOWN_COMMAND` for a name the model does not
 * have, `VALIDATION` for arguments that nest deeper than the entry that carries them may hold
 * (docs/format.md, "Limits"), that its schema refuses, or that are not JSON. The arguments are
 * walked iteratively before anything recursive (the schema, `JSON.stringify`, a store) touches
 * them.
 */
export function parseCommand<S, C extends CommandMap<S>>(
  model: Model<S, C>,
  name: string,
  args: unknown,
  carrier: ArgsCarrier,
): { definition: CommandDefinition<S>; args: unknown } {
  const definition = Object.hasOwn(model.commands, name) ? model.commands[name] : undefined;
  if (definition === undefined) {
    const known = Object.keys(model.commands);
    const list = known.length === 0 ? "it has none" : `it has ${known.slice(0, 20).join(", ")}`;
    throw new StateSyncError(
      "UNKNOWN_COMMAND",
      `model ${model.name} has no command "${name}" (${list}${known.length > 20 ? ", ..." : ""})`,
      { details: { command: name } },
    );
  }
  const { maxDepth, entry } = CARRIERS[carrier];
  const problem = findJsonProblemWithDepth(args, maxDepth);
  if (problem?.depth !== undefined) {
    throw new StateSyncError(
      "VALIDATION",
      `the arguments of command "${name}" nest ${problem.depth} levels deep (past ${maxDepth} at ${problem.path}); ${entry} carries arguments of at most ${maxDepth} levels (docs/format.md, "Limits"); nothing was appended`,
      { details: { command: name, depth: problem.depth, maxDepth } },
    );
  }
  // Arguments that are not JSON may fail the schema too (`undefined` for missing ones), whose
  // message says more; only a value of bounded depth without a cycle reaches the schema.
  if (problem === undefined || !nestedDeeperThan(args, maxDepth)) {
    const parsed = safeParse(definition.args, args);
    if (!parsed.success) throw validation(`invalid arguments for command "${name}"`, parsed.error);
    if (problem === undefined) return { definition, args: parsed.data as unknown };
  }
  throw new StateSyncError(
    "VALIDATION",
    `arguments of "${name}" are not JSON (${problem.path}: ${problem.message})`,
  );
}
