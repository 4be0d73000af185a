import { enablePatches, Immer, type Patch } from "immer";
import { applyCheckedPatches } from "./array-patches.js";
import type { CommandEntry, Entry, UpdateEntry } from "./entry.js";
import { StateSyncError } from "./errors.js";
import { deepFreeze } from "./freeze.js";
import type { CommandMap, Model, UpdateContext } from "./model.js";
import { mulberry32 } from "./prng.js";

enablePatches();

/**
 * statesync's own Immer: it does not freeze what it produces; `deepFreeze` does, visiting only
 * the new containers (freeze.ts says why). The application's Immer settings are left alone.
 */
export const immer = new Immer({ autoFreeze: false });

/** What applying one entry did. Each entry is applied in isolation: a failure changes nothing. */
export type ApplyOutcome<S> =
  /** The entry changed (or kept) the state. */
  | { kind: "applied"; state: S }
  /** The entry is a no-op on every replica (its command threw or its args failed the schema). */
  | { kind: "noop"; error: StateSyncError }
  /** The replica cannot apply the entry and must stop before it (unknown command). */
  | { kind: "stall"; error: StateSyncError };

/** The deterministic context of an entry (see {@link UpdateContext}). */
export function entryContext(
  revision: number,
  timestamp: number,
  seed: number,
  clientId: string,
): UpdateContext {
  return { revision, timestamp, random: mulberry32(seed), clientId };
}

function applyUpdate<S>(state: S, entry: UpdateEntry): ApplyOutcome<S> {
  try {
    // As Immer's applyPatches: a replace of the root starts over from its value.
    let base = state as object;
    let patches = entry.patches as Patch[];
    for (let i = patches.length - 1; i >= 0; i--) {
      if (patches[i]!.path.length === 0 && patches[i]!.op === "replace") {
        base = patches[i]!.value as object;
        patches = patches.slice(i + 1);
        break;
      }
    }
    const next = (
      patches.length === 0
        ? base
        : immer.produce(base, (draft) => {
            applyCheckedPatches(immer, draft, patches);
          })
    ) as S;
    return { kind: "applied", state: deepFreeze(next) };
  } catch (cause) {
    return {
      kind: "noop",
      error: new StateSyncError(
        "COMMAND_FAILED",
        `patches could not be applied: ${String(cause)}`,
        {
          cause,
        },
      ),
    };
  }
}

function applyCommand<S, C extends CommandMap<S>>(
  model: Model<S, C>,
  state: S,
  entry: CommandEntry,
  revision: number,
): ApplyOutcome<S> {
  const command = Object.hasOwn(model.commands, entry.name)
    ? model.commands[entry.name]
    : undefined;
  if (command === undefined) {
    return {
      kind: "stall",
      error: new StateSyncError(
        "UNKNOWN_COMMAND",
        `command "${entry.name}" is unknown to model ${model.name} v${model.version}; upgrade this client`,
        { details: { command: entry.name } },
      ),
    };
  }
  const args = command.args.safeParse(entry.args);
  if (!args.success) {
    return {
      kind: "noop",
      error: new StateSyncError(
        "VALIDATION",
        `arguments of command "${entry.name}" fail its schema`,
        {
          cause: args.error,
          details: { command: entry.name },
        },
      ),
    };
  }
  const ctx = entryContext(revision, entry.ts, entry.seed, entry.client);
  try {
    const next = immer.produce(state, (draft) => {
      const r: unknown = command.apply(draft as never, args.data, ctx);
      if (r !== undefined && typeof (r as { then?: unknown }).then === "function") {
        throw new StateSyncError("VALIDATION", "command recipes must be synchronous");
      }
    });
    return { kind: "applied", state: deepFreeze(next) };
  } catch (cause) {
    return {
      kind: "noop",
      error: new StateSyncError(
        "COMMAND_FAILED",
        `command "${entry.name}" threw: ${String(cause)}`,
        {
          cause,
          details: { command: entry.name },
        },
      ),
    };
  }
}

/**
 * Applies an `update` or `command` entry to `state` at `revision` (the revision before the entry).
 * Pure: the same inputs give the same outcome on every replica.
 */
export function applyEntry<S, C extends CommandMap<S>>(
  model: Model<S, C>,
  state: S,
  entry: Extract<Entry, { kind: "update" | "command" }>,
  revision: number,
): ApplyOutcome<S> {
  return entry.kind === "update"
    ? applyUpdate(state, entry)
    : applyCommand(model, state, entry, revision);
}

/** An entry {@link applyBatch} can take: an update, or a known command with its parsed args. */
export type BatchItem =
  | { entry: UpdateEntry; revision: number }
  | { entry: CommandEntry; revision: number; args: unknown };

/**
 * Whether `entry` can join a batch (see {@link applyBatch}): an update whose patches do not
 * replace the root, or a command this model knows whose arguments pass its schema. Returns the
 * batch item, or undefined when the entry must be applied on its own.
 */
export function batchItem<S, C extends CommandMap<S>>(
  model: Model<S, C>,
  entry: Entry,
  revision: number,
): BatchItem | undefined {
  if (entry.kind === "update") {
    return entry.patches.some((p) => p.path.length === 0) ? undefined : { entry, revision };
  }
  if (entry.kind !== "command" || !Object.hasOwn(model.commands, entry.name)) return undefined;
  const args = model.commands[entry.name]!.args.safeParse(entry.args);
  return args.success ? { entry, revision, args: args.data } : undefined;
}

/**
 * Applies consecutive entries to `state` in one Immer draft (one copy of each container they
 * touch, instead of one per entry), each entry seeing the state its predecessors left, as
 * {@link applyEntry} one by one would. `revision` is the revision before the first. Returns
 * undefined when any entry throws (nothing is applied then): the caller applies them one by one,
 * which keeps each failure isolated to its own entry.
 */
export function applyBatch<S, C extends CommandMap<S>>(
  model: Model<S, C>,
  state: S,
  items: readonly BatchItem[],
  revision: number,
): S | undefined {
  try {
    const next = immer.produce(state, (draft) => {
      let before = revision;
      for (const item of items) {
        const e = item.entry;
        if (e.kind === "update") {
          applyCheckedPatches(immer, draft as object, e.patches as Patch[]);
        } else {
          const ctx = entryContext(before, e.ts, e.seed, e.client);
          const r: unknown = model.commands[e.name]!.apply(
            draft as never,
            (item as { args: unknown }).args,
            ctx,
          );
          if (r !== undefined && typeof (r as { then?: unknown }).then === "function") {
            throw new StateSyncError("VALIDATION", "command recipes must be synchronous");
          }
        }
        before = item.revision;
      }
    });
    return deepFreeze(next);
  } catch {
    return undefined;
  }
}
