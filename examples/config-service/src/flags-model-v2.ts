import { defineModel, type CommandCall, type StateSynchronizer } from "@statesync/core";
import { z } from "zod";
import { commandsFor, type Draft } from "./command.js";
import { flagdConfigSchema, flagdNameSchema, type FlagdConfig } from "./flagd-schema.js";
import { FlagCommandError, flagsModel } from "./flags-model.js";

const command = commandsFor<FlagdConfig>();

/** The owner a flag gets when nothing names one (a migrated flag, a loaded file without one). */
export const UNASSIGNED = "unassigned";

/** A team that owns flags: a non-empty single-line name of at most 128 characters. */
export const ownerSchema = z
  .string()
  .min(1)
  .max(128)
  .regex(/^.+$/u, "a non-empty name without line breaks");

/** The owner recorded in a flag's flagd metadata, when it is a valid one. */
function ownerIn(metadata: unknown): string | undefined {
  const owner = (metadata as { owner?: unknown } | undefined)?.owner;
  return ownerSchema.safeParse(owner).success ? (owner as string) : undefined;
}

/**
 * `document` with an owner on every flag, in its flagd metadata (`metadata.owner`, returned
 * with flagd evaluations): the flag's own owner when it names a valid one, else the owner the
 * same flag key has in `previous`, else {@link UNASSIGNED}. Pure: the same arguments give the
 * same document; `document` is not changed.
 */
export function withOwners(document: FlagdConfig, previous?: FlagdConfig): FlagdConfig {
  const copy = JSON.parse(JSON.stringify(document)) as FlagdConfig;
  for (const [key, flag] of Object.entries(copy.flags)) {
    const before = previous && Object.hasOwn(previous.flags, key) ? previous.flags[key] : undefined;
    const owner = ownerIn(flag.metadata) ?? ownerIn(before?.metadata) ?? UNASSIGNED;
    flag.metadata = { ...flag.metadata, owner };
  }
  return copy;
}

/**
 * Version 2's state: a flagd document (flagd still decides what is valid) in which every flag
 * names its owning team in `metadata.owner`.
 */
export const ownedFlagsSchema = flagdConfigSchema.superRefine((config, ctx) => {
  for (const [key, flag] of Object.entries(config.flags)) {
    if (ownerIn(flag.metadata) === undefined) {
      ctx.addIssue({ code: "custom", message: `flag "${key}" has no owner (metadata.owner)` });
    }
  }
});

/** The commands of version 1 that version 2 keeps: all of them, `replaceDocument` reworked. */
const KEPT = new Set(Object.keys(flagsModel.commands));

/**
 * A command of version 1 that landed after the log switched to version 2 (an unconditional
 * update from a service that had not seen the switch): every version-1 command still makes sense
 * in version 2 and takes the same arguments (`replaceDocument` now keeps or assigns owners), so
 * it is applied as is; anything else is skipped (`OUTDATED_COMMAND` on every replica alike).
 */
export function upgradeFlagCommand(
  call: CommandCall,
  fromVersion: number,
): CommandCall | undefined {
  return fromVersion === 1 && KEPT.has(call.name) ? call : undefined;
}

/**
 * Version 2 of the `feature-flags` model: flags have owners. Each flag names the team that owns
 * it in its flagd metadata (`metadata.owner`, so flagd returns it with every evaluation and the
 * document stays a valid flagd file); the new command `setOwner` hands a flag to another team.
 *
 * - `predecessor`: {@link flagsModel} (version 1), which replays the entries written before the
 *   switch;
 * - `migrate`: {@link withOwners} (a flag keeps an `owner` it already had in its metadata,
 *   others get {@link UNASSIGNED}); evaluations are unchanged;
 * - `upgradeCommand`: {@link upgradeFlagCommand}.
 *
 * A fresh log starts from the initial flags migrated the same way.
 */
export const flagsModelV2 = defineModel({
  name: flagsModel.name,
  version: 2,
  state: ownedFlagsSchema,
  initial: withOwners(flagsModel.initial as FlagdConfig),
  predecessor: flagsModel,
  migrate: (previous: FlagdConfig) => withOwners(previous),
  upgradeCommand: upgradeFlagCommand,
  commands: {
    ...flagsModel.commands,
    /**
     * Replaces the whole document, as in version 1. A flag the document gives no valid owner
     * keeps the owner its key had (so loading last month's file does not erase owners), or gets
     * {@link UNASSIGNED}.
     */
    replaceDocument: command(z.object({ document: flagdConfigSchema }), (draft, args) => {
      const next = withOwners(args.document, draft as FlagdConfig);
      const root = draft as Record<string, unknown>;
      for (const key of Object.keys(root)) delete root[key];
      Object.assign(root, next);
    }),
    /** Hands `flag` to the team `owner`. Refuses an unknown flag (nothing is written). */
    setOwner: command(
      z.object({ flag: flagdNameSchema, owner: ownerSchema }),
      (draft: Draft<FlagdConfig>, args) => {
        const flag = Object.hasOwn(draft.flags, args.flag) ? draft.flags[args.flag] : undefined;
        if (flag === undefined) throw new FlagCommandError(`unknown flag "${args.flag}"`);
        flag.metadata = { ...flag.metadata, owner: args.owner };
      },
    ),
  },
});

/** The commands of {@link flagsModelV2}. */
export type FlagCommandsV2 = typeof flagsModelV2.commands;

/** A replica of the flags at version 2. */
export type FlagsSynchronizerV2 = StateSynchronizer<FlagdConfig, FlagCommandsV2>;
