import { defineModel, type StateSynchronizer, type UpdateContext } from "@statesync/core";
import { z } from "zod";
import { commandsFor, type Draft } from "./command.js";
import {
  flagdConfigSchema,
  flagdNameSchema,
  jsonSchema,
  variantKind,
  type Flag,
  type FlagdConfig,
  type Json,
  type JsonObject,
} from "./flagd-schema.js";
import { flagdProblem } from "./flagd-validate.js";
import { initialFlags } from "./flags.js";
import {
  expandedTargetings,
  findFractionals,
  possibleVariants,
  unservableVariants,
  type FractionalRule,
} from "./targeting.js";

const command = commandsFor<FlagdConfig>();

/** Thrown by a flag command whose arguments do not fit the flags (nothing is written). */
export class FlagCommandError extends Error {
  override readonly name = "FlagCommandError";
}

function flagOf(draft: Draft<FlagdConfig>, key: string): Draft<Flag> {
  const flag = Object.hasOwn(draft.flags, key) ? draft.flags[key] : undefined;
  if (flag === undefined) throw new FlagCommandError(`unknown flag "${key}"`);
  return flag;
}

function requireVariant(flag: Draft<Flag>, key: string, variant: string): void {
  if (!Object.hasOwn(flag.variants, variant)) {
    const known = Object.keys(flag.variants).join(", ");
    throw new FlagCommandError(`"${variant}" is not a variant of "${key}" (${known})`);
  }
}

/** The variant flagd serves when targeting gives none; flagd reads `""` as none too. */
function defaultOf(flag: Draft<Flag>): string | null {
  return flag.defaultVariant ? flag.defaultVariant : null;
}

/** Records who changed the flag and when (flagd flag metadata, returned with evaluations). */
function touch(flag: Draft<Flag>, ctx: UpdateContext): void {
  flag.metadata = { ...flag.metadata, changedBy: ctx.clientId, changedAt: ctx.timestamp };
}

function plain(draft: Draft<FlagdConfig>): JsonObject {
  return JSON.parse(JSON.stringify(draft)) as JsonObject;
}

/**
 * Runs after every flag-editing command, whatever it did: the flags must still be a document
 * flagd accepts, and no flag may serve a variant it does not have (evaluation would return
 * `ERROR`) unless it already could before the command.
 */
function checkOutcome(before: JsonObject, draft: Draft<FlagdConfig>): void {
  const after = plain(draft);
  const problem = flagdProblem(JSON.stringify(after));
  if (problem !== undefined) throw new FlagCommandError(`the change is refused: ${problem}`);
  const old = unservableVariants(before);
  for (const [key, names] of unservableVariants(after)) {
    const added = names.filter((name) => !old.get(key)?.includes(name));
    if (added.length > 0) {
      throw new FlagCommandError(
        `the change is refused: "${key}" would serve ${added.map((n) => `"${n}"`).join(", ")}, ` +
          "which is not one of its variants (evaluation would return ERROR)",
      );
    }
  }
}

/** A command on one flag's definition, followed by {@link checkOutcome}. */
function flagCommand<A extends z.ZodType>(
  args: A,
  apply: (draft: Draft<FlagdConfig>, args: z.output<A>, ctx: UpdateContext) => void,
) {
  return command(args, (draft, parsed, ctx) => {
    const before = plain(draft);
    apply(draft, parsed, ctx);
    checkOutcome(before, draft);
  });
}

/**
 * The `fractional` rule `rollOut` rewrites: the only one whose bucket is the variant served,
 * with buckets that name their variants. Throws a {@link FlagCommandError} saying why for every
 * other shape.
 */
function rolloutRule(key: string, targeting: Json): FractionalRule {
  const rules = findFractionals(targeting);
  const choosing = rules.filter((rule) => rule.role === "variant");
  const [rule] = choosing;
  if (rule !== undefined && choosing.length === 1) {
    const buckets = (rule.node["fractional"] as Json[]).filter(Array.isArray);
    const computed = buckets.findIndex((b) => b[0] !== null && typeof b[0] === "object");
    if (computed >= 0) {
      throw new FlagCommandError(
        `"${key}": a bucket of the fractional rule at ${rule.path} computes its variant with ` +
          "an expression; rollOut only rewrites buckets that name their variants",
      );
    }
    return rule;
  }
  if (choosing.length > 1) {
    throw new FlagCommandError(
      `"${key}" has ${choosing.length} fractional rules choosing its variant ` +
        `(${choosing.map((r) => r.path).join(", ")}); rollOut cannot tell which to change`,
    );
  }
  const [operand] = rules;
  if (operand !== undefined) {
    throw new FlagCommandError(
      `"${key}": the fractional rule at ${operand.path} feeds a condition or an operator instead ` +
        "of choosing the variant served; rollOut cannot change it (edit the targeting and load " +
        "the document instead)",
    );
  }
  const shared = JSON.stringify(targeting).includes('"$ref"')
    ? " (rules in $evaluators are shared by flags and never edited)"
    : "";
  throw new FlagCommandError(`"${key}" has targeting without a fractional rule${shared}`);
}

const flagArg = { flag: flagdNameSchema };

/**
 * The `feature-flags` model: one flagd flag definition file is the shared state. Every command
 * is meant for conditional updates (`update`): it validates against the current flags and
 * throws a {@link FlagCommandError} (nothing is written) when it does not fit, including when
 * the result would be a document flagd rejects or a flag that evaluates to `ERROR`.
 */
export const flagsModel = defineModel({
  name: "feature-flags",
  state: flagdConfigSchema,
  initial: initialFlags,
  commands: {
    /**
     * Replaces the whole document with `document` (what `flags load FILE` sends). flagd's strict
     * parse decides what is accepted (the args schema runs it); the document is kept as given,
     * `$evaluators` and `$ref`s included.
     */
    replaceDocument: command(z.object({ document: flagdConfigSchema }), (draft, args) => {
      const root = draft as Record<string, unknown>;
      for (const key of Object.keys(root)) delete root[key];
      Object.assign(root, JSON.parse(JSON.stringify(args.document)));
    }),
    /** Turns a flag on or off (`ENABLED` / `DISABLED`). */
    setFlagState: flagCommand(
      z.object({ ...flagArg, state: z.enum(["ENABLED", "DISABLED"]) }),
      (draft, args, ctx) => {
        const flag = flagOf(draft, args.flag);
        flag.state = args.state;
        touch(flag, ctx);
      },
    ),
    /**
     * Changes the variant served when no targeting rule matches; it must be a variant, or `null`
     * for none (evaluation then returns the caller's default, reason `DEFAULT`).
     */
    setDefaultVariant: flagCommand(
      z.object({ ...flagArg, variant: flagdNameSchema.nullable() }),
      (draft, args, ctx) => {
        const flag = flagOf(draft, args.flag);
        if (args.variant !== null) requireVariant(flag, args.flag, args.variant);
        flag.defaultVariant = args.variant;
        touch(flag, ctx);
      },
    ),
    /**
     * Serves `variant` to `percent` % of users and the default variant (or, without one, the
     * caller's default) to the rest. Without targeting, makes `{"fractional": buckets}`. With
     * targeting, replaces the buckets of its one `fractional` rule whose bucket is the variant
     * served (the root, or a branch of `if`s), keeping its bucketing expression. Refuses, saying
     * why: targeting without such a rule, a `fractional` that decides a condition (e.g. the `if`
     * of `[[false, 50], [true, 50]]`), several candidate rules, buckets computed by expressions.
     */
    rollOut: flagCommand(
      z.object({ ...flagArg, variant: flagdNameSchema, percent: z.number().int().min(0).max(100) }),
      (draft, args, ctx) => {
        const flag = flagOf(draft, args.flag);
        requireVariant(flag, args.flag, args.variant);
        const fallback = defaultOf(flag);
        if (args.variant === fallback) {
          throw new FlagCommandError(`roll out a variant other than the default of "${args.flag}"`);
        }
        const buckets = [
          [args.variant, args.percent],
          [fallback, 100 - args.percent],
        ];
        const targeting = flag.targeting as JsonObject | undefined;
        if (targeting === undefined || Object.keys(targeting).length === 0) {
          flag.targeting = { fractional: buckets };
        } else {
          const rule = rolloutRule(args.flag, targeting);
          const [first] = rule.node["fractional"] as Json[];
          const bucketBy = first !== undefined && !Array.isArray(first) ? [first] : [];
          rule.node["fractional"] = [...bucketBy, ...buckets];
        }
        touch(flag, ctx);
      },
    ),
    /** Adds a variant; its value must be of the kind of the flag's other variants. */
    addVariant: flagCommand(
      z.object({ ...flagArg, variant: flagdNameSchema, value: jsonSchema }),
      (draft, args, ctx) => {
        const flag = flagOf(draft, args.flag);
        if (Object.hasOwn(flag.variants, args.variant)) {
          throw new FlagCommandError(`"${args.flag}" already has a variant "${args.variant}"`);
        }
        if (args.value === null || Array.isArray(args.value)) {
          throw new FlagCommandError("a variant is a boolean, a string, a number or an object");
        }
        const [sibling] = Object.values(flag.variants) as Json[];
        const kind = variantKind(sibling ?? args.value);
        if (variantKind(args.value) !== kind) {
          throw new FlagCommandError(`variants of "${args.flag}" are ${kind} values`);
        }
        flag.variants[args.variant] = args.value;
        touch(flag, ctx);
      },
    ),
    /**
     * Removes a variant that can no longer be served: not the default, and not a result of the
     * targeting (`$ref`s expanded). Refuses when the targeting computes the variant it serves
     * (a `var`, `cat`... in a variant position, such as a `fractional` bucket `[{"var": ...}, 50]`),
     * since that could be the variant.
     */
    removeVariant: flagCommand(
      z.object({ ...flagArg, variant: flagdNameSchema }),
      (draft, args, ctx) => {
        const flag = flagOf(draft, args.flag);
        requireVariant(flag, args.flag, args.variant);
        const inUse = `"${args.variant}" of "${args.flag}" is still in use`;
        if (args.variant === defaultOf(flag)) throw new FlagCommandError(`${inUse}: the default`);
        const served = possibleVariants(expandedTargetings(plain(draft))[args.flag]);
        if (served.names.has(args.variant)) {
          throw new FlagCommandError(`${inUse}: its targeting serves it`);
        }
        if (served.computed.length > 0) {
          throw new FlagCommandError(
            `${inUse}, as far as can be told: its targeting computes the variant it serves ` +
              `(${served.computed.join(", ")})`,
          );
        }
        delete flag.variants[args.variant];
        touch(flag, ctx);
      },
    ),
  },
});

/** The commands of {@link flagsModel}. */
export type FlagCommands = typeof flagsModel.commands;

/** A replica of the flags. */
export type FlagsSynchronizer = StateSynchronizer<FlagdConfig, FlagCommands>;
