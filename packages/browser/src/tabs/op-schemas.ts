import { StateSyncError } from "@statesync/core";
import { z } from "zod/v4";
import { wireEntrySchema } from "./protocol.js";

/**
 * The schemas of the tabs' calls (docs/offline.md, "Tabs"): what a `req` of each op carries
 * (`opArgs`, checked by the leading tab before it calls its log) and what the `res` answers
 * (`opAnswers`, checked by the follower before its engine sees it). Both cross a boundary: any
 * script of the origin, or a tab of another version of the app, can post on the channel.
 *
 * The checks are of shapes and ranges only, cheap on the hot path: a `read` page's entries are
 * checked as objects of a safe integer, bytes (`instanceof Uint8Array`, never walked) and a
 * string; their order and range by one pass ({@link checkAnswer}).
 */

/** Entries per `read` answer. */
export const READ_PAGE = 256;

/**
 * The calls of the protocol, each a method of `RevisionedLog` (`append` both kinds). `otherStateAt`
 * is optional there: a leader whose log lacks it answers `false`, as the engine takes such a log.
 * A `req` of another op is answered `VALIDATION`, `details.unsupportedOp` (`runOp`).
 */
export const OPS = [
  "info",
  "append",
  "read",
  "entryAt",
  "otherStateAt",
  "findByMessageId",
  "truncateBefore",
] as const;

/** A call a follower sends the leader. */
export type Op = (typeof OPS)[number];

/** A revision: a safe integer >= 0 (0: before the first entry). */
const revision = z.number().int().nonnegative();
/** A `read`'s upper bound: a revision, or no bound. */
const upTo = z.union([revision, z.literal(Number.POSITIVE_INFINITY)]);
const bytes = z.instanceof(Uint8Array);

/**
 * Every op's arguments as a `req` carries them (as `TabLog` calls: `append`'s are the bytes, the
 * expected revision or `null` for an unconditional one, the message id and the attempt's time
 * limit in ms; `read`'s upper bound may be `Infinity`).
 */
export const opArgs = {
  info: z.tuple([]),
  append: z.tuple([
    bytes,
    revision.nullable(),
    z.string(),
    z.union([z.number().nonnegative(), z.literal(Number.POSITIVE_INFINITY)]).optional(),
  ]),
  read: z.tuple([revision, upTo]),
  entryAt: z.tuple([revision]),
  otherStateAt: z.tuple([revision.min(1)]),
  findByMessageId: z.tuple([z.string(), revision, revision.optional()]),
  truncateBefore: z.tuple([revision]),
} satisfies Record<Op, z.ZodType>;

/** Every op's answer as a `res` carries it (before {@link checkAnswer}'s range checks). */
export const opAnswers = {
  info: z.object({
    identity: z.string(),
    firstRevision: revision,
    latestRevision: revision,
    logPosition: revision.optional(),
    maxEntryBytes: z.number().int().positive(),
    truncationDenied: z.boolean().optional(),
  }),
  append: z.object({ revision: revision.min(1), duplicate: z.boolean() }),
  read: z.array(wireEntrySchema).max(READ_PAGE),
  entryAt: wireEntrySchema.optional(),
  otherStateAt: z.boolean(),
  findByMessageId: revision.min(1).optional(),
  truncateBefore: z.undefined(),
} satisfies Record<Op, z.ZodType>;

/** True for an op this version of the tabs' protocol knows. */
export function isOp(op: string): op is Op {
  return (OPS as readonly string[]).includes(op);
}

/**
 * `a`, the arguments of a `req` of `op`, as `op` takes them. Malformed: `VALIDATION` (the leader
 * calls nothing).
 */
export function checkArgs<K extends Op>(op: K, a: unknown): z.infer<(typeof opArgs)[K]> {
  const parsed = opArgs[op].safeParse(a);
  if (parsed.success) return parsed.data as z.infer<(typeof opArgs)[K]>;
  throw new StateSyncError("VALIDATION", `a malformed ${op} request: ${issue(parsed.error)}`, {
    details: { op },
  });
}

/**
 * `value`, the leader's answer to the call `op` with `args` (this tab's own, well-formed), as
 * `op`'s caller takes it: of its shape, a `read` page's entries ascending within the range asked,
 * an `entryAt` entry at the revision asked, a `findByMessageId` revision after the one given.
 * Malformed: `VALIDATION`; for an append `UNAVAILABLE` (`details.malformed`, not `notSent`: the
 * leader may have stored it, and the engine re-sends it with the same message id).
 */
export function checkAnswer(op: Op, args: readonly unknown[], value: unknown): unknown {
  const parsed = opAnswers[op].safeParse(value);
  const why = parsed.success ? outOfRange(op, args, parsed.data) : issue(parsed.error);
  if (why === undefined) return parsed.data;
  const message = `the leading tab answered ${op} malformed: ${why}`;
  if (op !== "append") throw new StateSyncError("VALIDATION", message, { details: { op } });
  throw new StateSyncError("UNAVAILABLE", `${message} (the append's outcome is unknown)`, {
    details: { op, malformed: true },
  });
}

/** Why a well-shaped answer is not one to the call made (undefined: it is). */
function outOfRange(op: Op, args: readonly unknown[], value: unknown): string | undefined {
  if (op === "read") {
    let after = (args[0] as number) - 1;
    for (const e of value as Array<{ revision: number }>) {
      if (e.revision <= after || e.revision > (args[1] as number)) {
        return `revision ${e.revision} out of order or outside ${args[0]}..${args[1]}`;
      }
      after = e.revision;
    }
  }
  const at = (value as { revision?: number } | undefined)?.revision;
  if (op === "entryAt" && at !== undefined && at !== args[0]) {
    return `revision ${at} where ${args[0]} was asked`;
  }
  if (op === "findByMessageId" && value !== undefined && (value as number) <= (args[1] as number)) {
    return `revision ${value as number}, not after ${args[1]}`;
  }
  return undefined;
}

function issue(error: z.ZodError): string {
  const first = error.issues[0];
  return first ? `${first.path.join(".") || "(the whole)"}: ${first.message}` : "malformed";
}
