import { applyBatch, applyEntry, batchItem, type BatchItem } from "./apply.js";
import type { StateValidity } from "./command-check.js";
import { CHECKED_COMMAND_FORMAT } from "./entry-limits.js";
import type { CommandEntry, CommandsEntry } from "./entry-types.js";
import { StateSyncError } from "./errors.js";
import type { Model } from "./model.js";
import { commandForLog } from "./versions.js";

/** What {@link applyCommands} did. */
export type CommandsOutcome<S> =
  /**
   * The state after the entry's commands. `failures`: `[index, error]` of each command that was
   * consumed without effect (`COMMAND_FAILED`, or `OUTDATED_COMMAND` for a version's command
   * the log's version skips), in order.
   */
  | { kind: "applied"; state: S; failures: Array<[number, StateSyncError]> }
  /** The replica must stop before the entry (nothing of it applied). */
  | { kind: "stall"; error: StateSyncError };

/**
 * The command at `index` of a `commands` entry as the `command` entry it stands for: format 3
 * (checked), with the entry's `ts`, `client` and `mv` and its own `seed`, `name` and `args`.
 */
export function commandAt(entry: CommandsEntry, index: number): CommandEntry {
  const call = entry.commands[index]!;
  const single: CommandEntry = {
    v: CHECKED_COMMAND_FORMAT,
    kind: "command",
    ts: entry.ts,
    client: entry.client,
    seed: call.seed,
    name: call.name,
    args: call.args,
  };
  if (entry.mv !== undefined) single.mv = entry.mv;
  return single;
}

/**
 * Applies a `commands` entry (format 4, docs/format.md) to `state` at `revision` (the revision
 * before the entry): its commands in order, each exactly as a checked `command` entry of its own
 * ({@link commandAt}) would be, so one that fails leaves the others applied, the same on every
 * replica. Every command sees `revision` as the revision before it (`ctx.revision`): they share
 * one entry. `stalled(state)` is asked once, of the state after the entry (as of an entry
 * applied alone), whether the replica must stop before it (a migration to the replica's model
 * version failed); then nothing of the entry is applied.
 * Pure otherwise; `validity` is updated once the whole entry applied.
 */
export function applyCommands<S>(
  model: Model<S, any>,
  switchedFrom: number | undefined,
  state: S,
  entry: CommandsEntry,
  revision: number,
  validity: StateValidity,
  stalled: (state: S) => StateSyncError | undefined,
): CommandsOutcome<S> {
  const v = validity.fork(); // assigned back once the whole entry applied
  const n = entry.commands.length;
  const calls = entry.commands.map((_, i) =>
    commandForLog(model, switchedFrom, commandAt(entry, i)),
  );
  let current = state;
  let together = true; // false once a draft of several failed otherwise: one by one from then
  const failures: Array<[number, StateSyncError]> = [];
  // Each command's batch item, parsed once while it has not run: a draft that failed at its
  // first command left the others unrun, and they were parsed again for the next draft (every
  // command of an entry of 1,024 that throw: 500,000 argument parses, 1.1 s on every replica).
  const parsed = new Map<number, BatchItem | undefined>();
  const itemAt = (j: number): BatchItem | undefined => {
    if (parsed.has(j)) return parsed.get(j);
    const c = calls[j]!;
    const item = c instanceof StateSyncError ? undefined : batchItem(model, c, revision);
    parsed.set(j, item);
    return item;
  };
  for (let i = 0; i < n; i++) {
    const call = calls[i]!;
    if (call instanceof StateSyncError) {
      failures.push([i, call]);
      continue;
    }
    // The commands from here that can share one draft (`applyBatch`: the verdicts of one by one).
    const items: BatchItem[] = [];
    for (let j = i; together && j < n; j++) {
      const item = itemAt(j);
      if (item === undefined) break;
      items.push(item);
    }
    if (items.length > 1) {
      const out = applyBatch(model, current, items, revision, v);
      if (out.kind === "applied") {
        current = out.state;
        i += items.length - 1;
        continue;
      }
      // The commands that ran in the draft are parsed again if drafted again (as before).
      for (let j = i; j <= i + (out.kind === "failed" ? out.at : items.length); j++) {
        parsed.delete(j);
      }
      // The commands before the one that failed, together; then that one on its own (below).
      // Parsed again (not `items`): a command that changed its arguments (`ids.reverse()`) ran
      // again on what it left of them (a schema that hands the entry's value over as it is,
      // `z.any()`, still does).
      together = out.kind === "failed";
      const at = out.kind === "failed" ? out.at : 0;
      const head: BatchItem[] = [];
      for (let j = i; j < i + at; j++) head.push(itemAt(j)!);
      const before = at > 0 ? applyBatch(model, current, head, revision, v) : undefined;
      if (before?.kind === "applied") {
        current = before.state;
        i += at;
      } else for (let j = i; j < i + at; j++) parsed.delete(j); // they ran: parsed again
    }
    const alone = calls[i] as CommandEntry; // (a command that failed the batch is never an error)
    const outcome = applyEntry(model, current, alone, revision, v);
    if (outcome.kind === "stall") return outcome;
    if (outcome.kind === "noop") failures.push([i, outcome.error]);
    else current = outcome.state;
  }
  const error = current === state ? undefined : stalled(current);
  if (error) return { kind: "stall", error };
  validity.assign(v);
  return { kind: "applied", state: current, failures };
}

/**
 * `error` of the command at `index` (from 0) of the `count` commands of the entry at `revision`
 * (`details.revision`, `.index`). The message counts from 1, as a reader does: "command 7 of 36"
 * is `details.index` 6 (before, it read "command 6 of the entry" for the seventh).
 */
export function atCommand(
  error: StateSyncError,
  revision: number,
  index: number,
  count: number,
): StateSyncError {
  return new StateSyncError(
    error.code,
    `${error.message} (command ${index + 1} of ${count} in the entry at revision ${revision})`,
    // `commands`: how many the entry holds (a reader tells a wholly refused entry from one in part).
    {
      cause: error.cause ?? error,
      details: { ...error.details, revision, index, commands: count },
    },
  );
}
