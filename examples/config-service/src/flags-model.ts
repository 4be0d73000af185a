import { defineModel, type StateSynchronizer, type UpdateContext } from "@statesync/core";
import { z } from "zod";
import { commandsFor, type Draft } from "./command.js";
import {
  flagdConfigSchema,
  jsonSchema,
  nameSchema,
  variantKind,
  type Flag,
  type FlagdConfig,
  type Json,
  type JsonObject,
} from "./flagd-schema.js";
import { initialFlags } from "./flags.js";

const command = commandsFor<FlagdConfig>();

/** Thrown by a flag command whose arguments do not fit the flag (nothing is written). */
export class FlagCommandError extends Error {
  override readonly name = "FlagCommandError";
}

function flagOf(draft: Draft<FlagdConfig>, key: string): Draft<Flag> {
  const flag = draft.flags[key];
  if (flag === undefined) throw new FlagCommandError(`unknown flag "${key}"`);
  return flag;
}

function requireVariant(flag: Draft<Flag>, key: string, variant: string): void {
  if (!Object.hasOwn(flag.variants, variant)) {
    const known = Object.keys(flag.variants).join(", ");
    throw new FlagCommandError(`"${variant}" is not a variant of "${key}" (${known})`);
  }
}

/** Records who changed the flag and when (flagd flag metadata, returned with evaluations). */
function touch(flag: Draft<Flag>, ctx: UpdateContext): void {
  flag.metadata = { ...flag.metadata, changedBy: ctx.clientId, changedAt: ctx.timestamp };
}

/** Depth-first search for the first JsonLogic node `{ "fractional": [...] }`. */
function findFractional(node: Json): JsonObject | undefined {
  if (node === null || typeof node !== "object") return undefined;
  if (!Array.isArray(node) && Array.isArray(node.fractional)) return node;
  for (const child of Object.values(node)) {
    const found = findFractional(child);
    if (found) return found;
  }
  return undefined;
}

/** True when some string in the targeting rules equals `text` (a variant it may return). */
function mentions(node: Json | undefined, text: string): boolean {
  if (node === text) return true;
  if (node === null || typeof node !== "object") return false;
  return Object.values(node).some((child) => mentions(child, text));
}

const flagArg = { flag: nameSchema };

/**
 * The `feature-flags` model: one flagd flag definition file is the shared state. Every command
 * is meant for conditional updates (`update`): it validates against the current flags and
 * throws a {@link FlagCommandError} (nothing is written) when it does not fit.
 */
export const flagsModel = defineModel({
  name: "feature-flags",
  state: flagdConfigSchema,
  initial: initialFlags,
  commands: {
    /** Turns a flag on or off (`ENABLED` / `DISABLED`). */
    setFlagState: command(
      z.object({ ...flagArg, state: z.enum(["ENABLED", "DISABLED"]) }),
      (draft, args, ctx) => {
        const flag = flagOf(draft, args.flag);
        flag.state = args.state;
        touch(flag, ctx);
      },
    ),
    /** Changes the variant served when no targeting rule matches; it must be a variant. */
    setDefaultVariant: command(
      z.object({ ...flagArg, variant: nameSchema }),
      (draft, args, ctx) => {
        const flag = flagOf(draft, args.flag);
        requireVariant(flag, args.flag, args.variant);
        flag.defaultVariant = args.variant;
        touch(flag, ctx);
      },
    ),
    /**
     * Serves `variant` to `percent` % of users and the default variant to the rest: replaces the
     * buckets of the flag's `fractional` rule (keeping its bucketing expression), or makes one
     * when the flag has no targeting. Throws when other targeting exists without `fractional`.
     */
    rollOut: command(
      z.object({ ...flagArg, variant: nameSchema, percent: z.number().int().min(0).max(100) }),
      (draft, args, ctx) => {
        const flag = flagOf(draft, args.flag);
        requireVariant(flag, args.flag, args.variant);
        if (args.variant === flag.defaultVariant) {
          throw new FlagCommandError(`roll out a variant other than the default of "${args.flag}"`);
        }
        const buckets = [
          [args.variant, args.percent],
          [flag.defaultVariant, 100 - args.percent],
        ];
        const targeting = flag.targeting as JsonObject | undefined;
        if (targeting === undefined || Object.keys(targeting).length === 0) {
          flag.targeting = { fractional: buckets };
        } else {
          const rule = findFractional(targeting);
          if (rule === undefined) {
            throw new FlagCommandError(`"${args.flag}" has targeting without a fractional rule`);
          }
          const [first] = rule.fractional as Json[];
          const bucketBy = first !== undefined && !Array.isArray(first) ? [first] : [];
          rule.fractional = [...bucketBy, ...buckets];
        }
        touch(flag, ctx);
      },
    ),
    /** Adds a variant; its value must be of the kind of the flag's other variants. */
    addVariant: command(
      z.object({ ...flagArg, variant: nameSchema, value: jsonSchema }),
      (draft, args, ctx) => {
        const flag = flagOf(draft, args.flag);
        if (Object.hasOwn(flag.variants, args.variant)) {
          throw new FlagCommandError(`"${args.flag}" already has a variant "${args.variant}"`);
        }
        const kind = variantKind(flag.variants[flag.defaultVariant] as Json);
        if (variantKind(args.value) !== kind) {
          throw new FlagCommandError(`variants of "${args.flag}" are ${kind} values`);
        }
        flag.variants[args.variant] = args.value;
        touch(flag, ctx);
      },
    ),
    /** Removes a variant that is neither the default nor named by a targeting rule. */
    removeVariant: command(z.object({ ...flagArg, variant: nameSchema }), (draft, args, ctx) => {
      const flag = flagOf(draft, args.flag);
      requireVariant(flag, args.flag, args.variant);
      if (args.variant === flag.defaultVariant || mentions(flag.targeting as Json, args.variant)) {
        throw new FlagCommandError(`"${args.variant}" of "${args.flag}" is still in use`);
      }
      delete flag.variants[args.variant];
      touch(flag, ctx);
    }),
  },
});

/** The commands of {@link flagsModel}. */
export type FlagCommands = typeof flagsModel.commands;

/** A replica of the flags. */
export type FlagsSynchronizer = StateSynchronizer<FlagdConfig, FlagCommands>;
