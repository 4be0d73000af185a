import { freeze, type Draft } from "immer";
import { z } from "zod/v4";
import { StateSyncError } from "./errors.js";
import { assertJson, stateHash } from "./json.js";

/**
 * The deterministic inputs a recipe may use; identical on every replica that applies the entry.
 * Recipes must not read `Date.now()`, `Math.random()` or any outside state: use these.
 */
export interface UpdateContext {
  /** Revision the update is based on (the replica's revision just before applying it). */
  readonly revision: number;
  /** Milliseconds since the epoch, chosen by the writer and stored in the entry. */
  readonly timestamp: number;
  /** Uniform in [0, 1), from a PRNG seeded by a seed stored in the entry. */
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

/** What {@link defineModel} takes. */
export interface ModelDefinition<S, A extends CommandSchemas> {
  /** Name of the model; stored in the genesis entry. */
  name: string;
  /** Version (non-negative integer, default 1); stored in the genesis entry. */
  version?: number;
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
 * with `z.toJSONSchema`), an `initial` that fails the schema or is not JSON, or a command without
 * an `args` schema or `apply` function.
 */
export function defineModel<S, A extends CommandSchemas = Record<never, z.ZodType>>(
  definition: ModelDefinition<S, A>,
): Model<S, CommandsOf<S, A>> {
  const name = nameSchema.safeParse(definition.name);
  if (!name.success) {
    throw new StateSyncError("VALIDATION", `invalid model name: ${name.error.issues[0]?.message}`);
  }
  const version = definition.version ?? 1;
  if (!Number.isSafeInteger(version) || version < 0) {
    throw new StateSyncError("VALIDATION", "model version must be a non-negative integer");
  }
  if (!(definition.state instanceof z.ZodType)) {
    throw new StateSyncError("VALIDATION", "model state must be a zod schema");
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
  const parsed = definition.state.safeParse(definition.initial);
  if (!parsed.success) {
    throw new StateSyncError(
      "VALIDATION",
      `initial state fails the state schema: ${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  assertJson(parsed.data, "initial state");
  for (const [commandName, command] of Object.entries(definition.commands ?? {})) {
    if (!command || !(command.args instanceof z.ZodType) || typeof command.apply !== "function") {
      throw new StateSyncError(
        "VALIDATION",
        `command ${commandName} needs an args zod schema and an apply function`,
      );
    }
  }
  // A copy that keeps key order (what users see); the hash uses canonical JSON.
  const initial = freeze(JSON.parse(JSON.stringify(parsed.data)) as S, true);
  return Object.freeze({
    name: definition.name,
    version,
    state: definition.state,
    initial,
    commands: Object.freeze({ ...definition.commands }) as CommandsOf<S, A>,
    initialHash: stateHash(initial),
  });
}
