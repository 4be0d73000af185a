import { enablePatches, Immer, type Patch } from "immer";
import { applyCheckedPatches, producePatched } from "./array-patches.js";
import { StateValidity } from "./command-check.js";
import { TouchRecorder, type Touch } from "./engine/touch-recorder.js";
import { freezeWritten } from "./engine/touch-values.js";
import {
  CHECKED_COMMAND_FORMAT,
  type CommandEntry,
  type Entry,
  type UpdateEntry,
} from "./entry.js";
import { StateSyncError } from "./errors.js";
import { deepFreeze } from "./freeze.js";
import type { CommandMap, Model, UpdateContext } from "./model.js";
import { mulberry32, pendingSeed } from "./prng.js";
import { inRecipes, isThenableRefusal, refuseThenable } from "./synchronous.js";
import { safeParse, schemaIssues } from "./schema-parse.js";

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

/**
 * The context of a pending update (`pending/`), the same wherever it runs (the optimistic view,
 * a tab showing another tab's edit, each attempt of its append): `timestamp` is when it was
 * queued and `random` is seeded by its identity ({@link pendingSeed}); only `revision` (the
 * state it runs on) and `clientId` (the replica running it) depend on where it runs.
 */
export function pendingContext(
  revision: number,
  update: { readonly origin: string; readonly seq: number; readonly queuedAt: number },
  clientId: string,
): UpdateContext {
  return entryContext(revision, update.queuedAt, pendingSeed(update.origin, update.seq), clientId);
}

function applyUpdate<S>(state: S, entry: UpdateEntry, validity: StateValidity): ApplyOutcome<S> {
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
    const next = (patches.length === 0 ? base : producePatched(immer, base, patches)) as S;
    validity.notePatches(entry.patches);
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
  validity: StateValidity,
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
  const args = safeParse(command.args, entry.args);
  if (!args.success) {
    return {
      kind: "noop",
      error: new StateSyncError(
        "VALIDATION",
        // What fails, for the operator reading it in the log's history (a trial: only the name).
        `arguments of command "${entry.name}" fail its schema: ${schemaIssues(args.error)}`,
        {
          cause: args.error,
          details: { command: entry.name },
        },
      ),
    };
  }
  const ctx = entryContext(revision, entry.ts, entry.seed, entry.client);
  // A checked command runs on a recorder's view of the draft, as in a batch (`applyBatch`), and
  // is checked along its touches: Immer's patches do not say where an array was left with holes
  // (`length = 0` then `length = 2` gives none), which the whole check refuses.
  // Commands of the older formats run on a view too, unchecked but for holes (`refuseHoles`):
  // any writer can still append one.
  const recorder = new TouchRecorder();
  let next: S;
  try {
    next = immer.produce(state, (draft) => {
      // Inside recipes: an `apply` that calls `update()` throws (`assertOutsideRecipes`).
      const run = () => command.apply(recorder.wrap(draft) as never, args.data, ctx);
      refuseThenable(inRecipes(run), entry.name);
      // Before Immer finalizes: an array grown by a large index costs it that index in time.
      recorder.refuseHoles(draft, () => HOLES);
    }) as S;
  } catch (cause) {
    if (cause === HOLES) return { kind: "noop", error: commandInvalid(entry.name, HOLES_WHY) };
    return { kind: "noop", error: commandThrew(entry.name, cause) };
  }
  if (entry.v !== CHECKED_COMMAND_FORMAT) {
    validity.unknown();
    return { kind: "applied", state: deepFreeze(next) };
  }
  // A draft reached without a view: the touches are not every write, the whole state is checked.
  // A draft written at a second place (aliased) is a revoked proxy by now: what was written is
  // read from the state produced (which also holds what was written through the other place).
  const touches = recorder.take();
  const writes = recorder.escaped ? undefined : recorder.aliased ? touches.map(unwritten) : touches;
  const why = validity.verdict(model, next, writes);
  if (why !== undefined) return { kind: "noop", error: commandInvalid(entry.name, why) };
  return { kind: "applied", state: deepFreeze(next) };
}

/** Thrown out of a command's draft (of any format) that an array with holes would leave. */
const HOLES = new Error("holes");
const HOLES_WHY = "it leaves an array with holes (indices it does not hold: not JSON)";

/** `t` without the value it wrote (`withValues` then reads it from the state). */
function unwritten(t: Touch): Touch {
  return t.written ? { op: t.op, path: t.path } : t;
}

/**
 * The no-op error of a command whose recipe threw, or returned a promise (`refuseThenable`:
 * counted as a throw, `details.reason: "threw"`, its `VALIDATION` error the cause).
 */
function commandThrew(name: string, cause: unknown): StateSyncError {
  const message = isThenableRefusal(cause)
    ? `command "${name}" returned a promise (recipes must be synchronous), so it was not applied`
    : `command "${name}" threw: ${String(cause)}`;
  return new StateSyncError("COMMAND_FAILED", message, {
    cause,
    details: { command: name, reason: "threw" },
  });
}

/** The no-op error of a checked command whose result fails the model (`why`). */
function commandInvalid(name: string, why: string): StateSyncError {
  return new StateSyncError(
    "COMMAND_FAILED",
    `command "${name}" would leave a state that fails the model's schema, so it was not applied: ${why}`,
    { details: { command: name, reason: "invalid-state" } },
  );
}

/**
 * Applies an `update` or `command` entry to `state` at `revision` (the revision before the entry).
 * Pure: the same inputs give the same outcome on every replica. `validity` is what the replay
 * knows of `state` (see `StateValidity`): it only makes the check of a checked command (format 3)
 * cheaper, never changes its verdict, and is updated to the state after the entry.
 */
export function applyEntry<S, C extends CommandMap<S>>(
  model: Model<S, C>,
  state: S,
  entry: Extract<Entry, { kind: "update" | "command" }>,
  revision: number,
  validity: StateValidity = new StateValidity(),
): ApplyOutcome<S> {
  return entry.kind === "update"
    ? applyUpdate(state, entry, validity)
    : applyCommand(model, state, entry, revision, validity);
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
  const args = safeParse(model.commands[entry.name]!.args, entry.args);
  return args.success ? { entry, revision, args: args.data } : undefined;
}

/** What {@link applyBatch} did. */
export type BatchOutcome<S> =
  /**
   * Every entry was applied: the state after the last. `preferredRun`: how many entries like
   * these the next draft should take (see {@link applyBatch}; undefined after fewer than 8).
   */
  | { kind: "applied"; state: S; preferredRun: number | undefined }
  /**
   * The entry at `at` threw, or (a checked command) left a state that fails the model, or is a
   * command after an update that made an array plain (`applyCheckedPatches`), or an update that
   * moves elements of a state that is itself an array (`RootArrayMoves`: the shared draft cannot
   * make it plain; alone, `producePatched` holds it in an object that can): nothing was applied.
   * The entries before it can be applied as a batch, and it on its own.
   */
  | { kind: "failed"; at: number }
  /** Applying in one draft failed otherwise: nothing was applied, apply them one by one. */
  | { kind: "unusable" };

/** Fewest and most entries {@link applyBatch} suggests for a draft. */
export const RUN_MIN = 32;
export const RUN_MAX = 256;

/**
 * Entries the next draft should take (see {@link applyBatch}): enough that the draft's own cost
 * `ownMs` (its first entry and the finalization) is at most an eighth of the entries', each of
 * which cost `eachMs`; {@link RUN_MIN} to {@link RUN_MAX}.
 */
export function draftRun(ownMs: number, eachMs: number): number {
  return Math.ceil(Math.min(RUN_MAX, Math.max(RUN_MIN, (8 * ownMs) / eachMs)));
}

/** Thrown out of the shared draft when an entry fails. */
const FAILED = Symbol("failed entry");

/**
 * Applies consecutive entries to `state` in one Immer draft (one copy of each container they
 * touch, instead of one per entry), each entry seeing the state its predecessors left, as
 * {@link applyEntry} one by one would. `revision` is the revision before the first. Checked
 * commands run on a `TouchRecorder`'s view of the draft and are checked along what they wrote
 * (the verdict `applyEntry` reaches: see `StateValidity`); what they wrote is frozen, so a later
 * entry that writes into it is refused (noted by the recorder even when the command catches the
 * refusal) instead of changing a value two places share, and runs alone. When an entry
 * fails, nothing is applied: the caller applies the entries before it again and that one alone,
 * which keeps each failure isolated to its own entry. `validity` is updated only when every
 * entry was applied.
 *
 * It also suggests how many entries the next draft should take (`preferredRun`): enough that
 * the draft's own cost (the first entry, which copies the containers the entries touch, and the
 * finalization) is at most an eighth of the entries' ({@link RUN_MIN} to {@link RUN_MAX}). A
 * longer draft keeps more alive meanwhile: the state it started from, the entries read for it
 * and their results. On a text-editing trace, where each entry replaces a 100 KB string, drafts
 * of 256 entries spanned several scavenges and V8 promoted what they kept alive, and a catch-up
 * took about 20% more CPU than with drafts of 32; a record of 10,000 entities costs ms to copy,
 * which a long draft amortises.
 */
export function applyBatch<S, C extends CommandMap<S>>(
  model: Model<S, C>,
  state: S,
  items: readonly BatchItem[],
  revision: number,
  validity: StateValidity = new StateValidity(),
): BatchOutcome<S> {
  const v = validity.fork();
  let recorder: TouchRecorder | undefined;
  let at = 0;
  let plain = false; // an update made an array of the draft plain (`applyCheckedPatches`)
  const t0 = performance.now();
  let t1 = t0;
  let t2 = t0;
  try {
    const next = immer.produce(state, (draft) => {
      let before = revision;
      for (; at < items.length; at++) {
        if (at === 1) t1 = performance.now();
        const item = items[at]!;
        const e = item.entry;
        if (e.kind === "update") {
          if (applyCheckedPatches(immer, draft as object, e.patches as Patch[])) plain = true;
          v.notePatches(e.patches);
        } else {
          // A recipe sees each array as the draft it gets alone, never one an update made plain.
          if (plain) throw FAILED;
          const ctx = entryContext(before, e.ts, e.seed, e.client);
          recorder ??= new TouchRecorder();
          const args = (item as { args: unknown }).args;
          // A promise returned throws out of the draft, failing this entry: applied alone, it
          // is a no-op (`applyCommand`).
          const view = recorder.wrap(draft) as never;
          refuseThenable(
            inRecipes(() => model.commands[e.name]!.apply(view, args, ctx)),
            e.name,
          );
          // It wrote into what an earlier entry wrote (frozen here, a draft when it runs alone):
          // refused in the draft even if the command caught that, or sloppy mode hid it. Or it
          // asked Immer about a draft (`original` answers with the state before the batch).
          if (recorder.takeRunAlone()) throw FAILED;
          checkInBatch(model, draft, recorder, v, e.v === CHECKED_COMMAND_FORMAT);
        }
        before = item.revision;
      }
      t2 = performance.now();
    });
    validity.assign(v);
    const frozen = deepFreeze(next);
    const own = t1 - t0 + performance.now() - t2; // the first entry, and the finalization
    const each = (t2 - t1) / Math.max(1, items.length - 1);
    const preferredRun = items.length < 8 ? undefined : draftRun(own, each);
    return { kind: "applied", state: frozen, preferredRun };
  } catch (e) {
    return e === FAILED || at < items.length ? { kind: "failed", at } : { kind: "unusable" };
  }
}

/**
 * The check of a command run on `recorder`'s view of the shared draft (along its touches when
 * `checked`, a format 3 command; an older format's is only refused holes). A command that put a
 * draft at a second place or reached a draft without a view (the recorder's `aliased`,
 * `escaped`) cannot be checked along its touches, nor go on sharing the draft: it fails here and
 * runs on its own. What it wrote is frozen, of any format: a value an unchecked command put at
 * two places (`d.a = d.b = {}`) and a later command wrote into through one changed both in the
 * draft, where alone it gets a draft of one (a catch-up reached another state than a replica
 * applying entry by entry). Throws `FAILED` when the command must not be kept in this batch.
 */
function checkInBatch(
  model: Model<any, any>,
  draft: unknown,
  recorder: TouchRecorder,
  v: StateValidity,
  checked: boolean,
): void {
  recorder.refuseHoles(draft, () => FAILED);
  const touches = recorder.take();
  if (recorder.aliased || recorder.escaped) throw FAILED;
  if (!checked) v.unknown();
  else if (v.verdict(model, draft, touches) !== undefined) throw FAILED;
  for (const t of touches) {
    if (t.op === "remove" || t.holes) continue;
    const value = t.written ? t.written.value : readAt(draft, t.path)?.v;
    if (value !== null && typeof value === "object" && !freezeWritten(value)) throw FAILED;
  }
}

/** The value at `path` in `root` as `{ v }`, or undefined when there is none. */
function readAt(root: unknown, path: ReadonlyArray<string | number>): { v: unknown } | undefined {
  let node = root as Record<string | number, unknown> | undefined;
  for (let i = 0; i < path.length - 1; i++) {
    const next = node?.[path[i]!];
    node = next !== null && typeof next === "object" ? (next as typeof node) : undefined;
  }
  const k = path[path.length - 1]!;
  return node !== undefined && Object.hasOwn(node, k) ? { v: node[k] } : undefined;
}
