import type { Draft } from "immer";
import { deepFreeze } from "./freeze.js";
import { z } from "zod/v4";
import { StateSyncError } from "./errors.js";
import { MAX_STATE_DEPTH } from "./entry-limits.js";
import { findJsonProblemWithDepth, stateHash } from "./json.js";
import { nestedDeeperThan } from "./nesting.js";
import type { JsonModelCheck } from "./type-checks.js";
import { safeParse } from "./schema-parse.js";

/**
 * The deterministic inputs a recipe may use; identical on every replica that applies the entry.
 * Recipes must not read `Date.now()`, `Math.random()` or any outside state: use these.
 */
export interface UpdateContext {
  /** Revision the update is based on (the replica's revision just before applying it). */
  readonly revision: number;
  /**
   * Milliseconds since the epoch, chosen by the writer and stored in the entry; for a pending
   * update (`pending/`), when it was queued (docs/offline.md, "Context").
   */
  readonly timestamp: number;
  /**
   * Uniform in [0, 1), from a PRNG seeded by a seed stored in the entry; for a pending update,
   * seeded by its identity, so its optimistic view draws what it commits.
   */
  random(): number;
  /** Id of the client that wrote the entry. */
  readonly clientId: string;
}

/** One named, serializable command: `args` validates the arguments, `apply` mutates a draft. */
export interface CommandDefinition<S, A extends z.ZodType = z.ZodType> {
  readonly args: A;
  apply(draft: Draft<S>, args: z.output<A>, ctx: UpdateContext): void;
}

/** Commands of a model, by name. */
export type CommandMap<S> = Record<string, CommandDefinition<S, any>>;

/** The argument schemas of a model's commands, by name (what `defineModel` infers). */
export type CommandSchemas = Record<string, z.ZodType>;

/** The command definitions for argument schemas `A`: `apply` gets typed `args`. */
export type CommandsOf<S, A extends CommandSchemas> = {
  [K in keyof A]: CommandDefinition<S, A[K]>;
};

/** The arguments a command takes, typed from its schema's input. */
export type CommandArgs<C> = C extends CommandDefinition<any, infer A> ? z.input<A> : never;

/** A command of an older model version, as a newer model receives it (see `upgradeCommand`). */
export interface CommandCall {
  readonly name: string;
  readonly args: unknown;
}

/** What {@link defineModel} takes. */
export interface ModelDefinition<S, A extends CommandSchemas, P = any> {
  /** Name of the model; stored in the genesis entry. */
  name: string;
  /**
   * Version (non-negative integer, default 1); stored in the genesis entry and in every switch,
   * snapshot and command entry. A version above the predecessor's needs `predecessor` and
   * `migrate` to read a log written before it (docs/versions.md).
   */
  version?: number;
  /**
   * The model this version replaces (same name, lower version). Its `initial` and commands replay
   * the entries written before the log switched to this version; a chain of predecessors reads
   * logs of any older version.
   */
  predecessor?: Model<P, any>;
  /**
   * The predecessor's state → this version's state. Must be deterministic (every replica runs
   * it, or trusts the switch entry that carries its result); the result is checked against
   * `state`. Required with `predecessor`.
   */
  migrate?: (previous: P) => S;
  /**
   * An unconditional command of an older version that landed after the switch (its writer had
   * not seen it): the command of this version to apply instead, or undefined to skip it (an
   * `OUTDATED_COMMAND` event on every replica alike). Deterministic. Default: skip.
   */
  upgradeCommand?: (command: CommandCall, fromVersion: number) => CommandCall | undefined;
  /** zod schema of the whole state, restricted to JSON values (no Date, Map, undefined, NaN). */
  state: z.ZodType<S>;
  /** The state before any update; validated against `state`. */
  initial: S;
  /**
   * Named commands (for conditional and unconditional updates): `{ args: <zod schema>,
   * apply(draft, args, ctx) }`; `args` in `apply` is typed from the schema's output.
   */
  commands: CommandsOf<S, A>;
}

/** A validated model (see {@link defineModel}). */
export interface Model<S, C extends CommandMap<S> = CommandMap<S>> {
  readonly name: string;
  readonly version: number;
  readonly state: z.ZodType<S>;
  /** Deeply frozen copy of the initial state. */
  readonly initial: S;
  readonly commands: C;
  /** SHA-256 of the canonical JSON of `initial` (stored in the genesis entry). */
  readonly initialHash: string;
  /** See {@link ModelDefinition.predecessor}. */
  readonly predecessor?: Model<any, any> | undefined;
  /** See {@link ModelDefinition.migrate}. */
  readonly migrate?: ((previous: any) => S) | undefined;
  /** See {@link ModelDefinition.upgradeCommand}. */
  readonly upgradeCommand?:
    ((command: CommandCall, fromVersion: number) => CommandCall | undefined) | undefined;
}

const nameSchema = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[A-Za-z0-9_.:/-]+$/, "letters, digits and _ . : / - only");

/**
 * Defines a model: validates the definition and precomputes the hash of `initial` that the
 * genesis entry records.
 *
 * Throws `VALIDATION` for a bad name or version, a schema that admits non-JSON values (checked
 * with `z.toJSONSchema`), an `initial` that fails the schema or is not JSON, a command without
 * an `args` schema or `apply` function, or a `predecessor` that is not an older version of the
 * same model, or comes without `migrate`.
 */
export function defineModel<S, A extends CommandSchemas = Record<never, z.ZodType>, P = any>(
  definition: ModelDefinition<S, A, P> & NoInfer<JsonModelCheck<S, A>>,
): Model<S, CommandsOf<S, A>> {
  const shape = definitionShape.safeParse(definition);
  if (!shape.success) {
    throw new StateSyncError(
      "VALIDATION",
      `invalid model definition: ${z.prettifyError(shape.error)}`,
      {
        cause: shape.error,
      },
    );
  }
  const name = nameSchema.safeParse(definition.name);
  if (!name.success) {
    throw new StateSyncError("VALIDATION", `invalid model name: ${name.error.issues[0]?.message}`);
  }
  const version = definition.version ?? 1;
  if (!Number.isSafeInteger(version) || version < 0) {
    throw new StateSyncError("VALIDATION", "model version must be a non-negative integer");
  }
  if (!(definition.state instanceof z.ZodType)) {
    throw new StateSyncError(
      "VALIDATION",
      'model state must be a zod 4 schema (with zod 3.25, import z from "zod/v4"; a zod 3 schema is not one)',
    );
  }
  try {
    z.toJSONSchema(definition.state, { unrepresentable: "throw", io: "output" });
  } catch (cause) {
    throw new StateSyncError(
      "VALIDATION",
      `model state schema admits values that are not JSON: ${(cause as Error).message}`,
      { cause },
    );
  }
  // Too deep, or a cycle, before the schema, which may recurse; other values that are not JSON
  // after it (its message says more of a missing or mistyped field).
  if (nestedDeeperThan(definition.initial, MAX_STATE_DEPTH)) checkInitial(definition.initial);
  const parsed = safeParse(definition.state, definition.initial);
  if (!parsed.success) {
    throw new StateSyncError(
      "VALIDATION",
      `initial state fails the state schema: ${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  checkInitial(parsed.data);
  for (const [commandName, command] of Object.entries(definition.commands ?? {})) {
    if (!command || !(command.args instanceof z.ZodType) || typeof command.apply !== "function") {
      throw new StateSyncError(
        "VALIDATION",
        `command ${commandName} needs an args zod schema and an apply function`,
      );
    }
  }
  checkPredecessor(definition, version);
  // A copy that keeps key order (what users see); the hash uses canonical JSON.
  const initial = deepFreeze(JSON.parse(JSON.stringify(parsed.data)) as S);
  return Object.freeze({
    name: definition.name,
    version,
    state: definition.state,
    initial,
    commands: Object.freeze({ ...definition.commands }) as CommandsOf<S, A>,
    initialHash: stateHash(initial),
    predecessor: definition.predecessor,
    migrate: definition.migrate,
    upgradeCommand: definition.upgradeCommand,
  });
}

const fn = z.custom<(...args: never[]) => unknown>(
  (v) => typeof v === "function",
  "expected a function",
);

/**
 * The keys a model definition may have (a fresh-eyes trial: `comands` or `predecesor`, a typo,
 * was accepted in silence and gave a model without commands or predecessor; `defineModel()` threw
 * a raw `TypeError`). What each holds is checked below, with messages of its own. A model spread
 * into a new definition (`defineModel({ ...v1, name: "other" })`) brings its `initialHash`, which
 * is accepted and computed again.
 */
const definitionShape = z.strictObject({
  name: z.unknown(),
  version: z.unknown().optional(),
  predecessor: z.unknown().optional(),
  migrate: fn.optional(),
  upgradeCommand: fn.optional(),
  state: z.unknown(),
  initial: z.unknown(),
  initialHash: z.unknown().optional(),
  commands: z
    .record(
      z.string(),
      z.strictObject({
        // "expected nonoptional, received undefined" named nothing a user could act on (a trial)
        args: z.unknown().refine((a) => a !== undefined, {
          error: "a command needs an args schema: z.object({}) for none",
        }),
        apply: z.unknown(),
      }),
    )
    .optional(),
});

/**
 * Throws `VALIDATION` unless `initial` is JSON nested at most `MAX_STATE_DEPTH` levels (a deeper
 * state could never be compacted, switched, saved or exported: docs/format.md, "Limits"),
 * walked iteratively before anything recursive touches it.
 */
function checkInitial(initial: unknown): void {
  const problem = findJsonProblemWithDepth(initial, MAX_STATE_DEPTH);
  if (problem?.depth !== undefined) {
    throw new StateSyncError(
      "VALIDATION",
      `the initial state nests ${problem.depth} levels deep (past ${MAX_STATE_DEPTH} at ${problem.path}); a state may nest at most ${MAX_STATE_DEPTH} levels (docs/format.md, "Limits")`,
      { details: { depth: problem.depth, maxDepth: MAX_STATE_DEPTH } },
    );
  }
  if (problem !== undefined) {
    throw new StateSyncError(
      "VALIDATION",
      `initial state is not a JSON value (${problem.path}: ${problem.message})`,
    );
  }
}

function checkPredecessor(definition: ModelDefinition<any, any>, version: number): void {
  const { predecessor, migrate, upgradeCommand } = definition;
  const fail = (why: string) => {
    throw new StateSyncError("VALIDATION", `model ${definition.name} v${version}: ${why}`);
  };
  if (predecessor === undefined) {
    if (migrate !== undefined || upgradeCommand !== undefined) {
      fail("migrate and upgradeCommand need a predecessor");
    }
    return;
  }
  if (typeof predecessor !== "object" || typeof predecessor.initialHash !== "string") {
    fail("predecessor must be a model made by defineModel");
  }
  if (predecessor.name !== definition.name) {
    fail(`its predecessor is model ${predecessor.name}; a predecessor has the same name`);
  }
  if (!(predecessor.version < version)) {
    fail(`its predecessor's version (${predecessor.version}) must be lower`);
  }
  if (typeof migrate !== "function") fail("a predecessor needs a migrate function");
  if (upgradeCommand !== undefined && typeof upgradeCommand !== "function") {
    fail("upgradeCommand must be a function");
  }
}
