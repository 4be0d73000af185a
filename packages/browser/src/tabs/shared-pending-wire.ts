import { z } from "zod/v4";

// What tabs tell each other of their pending updates (`sharePendingAcrossTabs`,
// shared-pending.ts): the messages, checked with zod as they arrive, and what a tab keeps of
// another's.

/** The most items one message carries. */
export const MAX_OPS = 100_000;

/**
 * What a tab tells the others of its pending updates. `pending`: the whole list of its named
 * commands not confirmed yet (when it opens, when a tab says hello, or asks it for it), with the
 * revision of its confirmed state when it said so; `delta`: what changed since its report `seq`
 * − 1 (items added, ids removed, its revision). A tab that misses a step (a `delta` whose `seq`
 * does not follow the last it has, or of another queue) asks that tab for its whole list again
 * (`hello` with `to`).
 */
const op = z.object({
  id: z.number().optional(),
  /** Its queue session (`PendingUpdate.origin`): with `id`, its identity in the log. */
  o: z.string().max(512).optional(),
  c: z.string().max(256),
  a: z.unknown(),
  at: z.number(),
  /** The client id of the replica that queued it (`ctx.clientId` of its command). */
  cl: z.string().max(64).optional(),
});
export const messageSchema = z.union([
  z.object({ t: z.literal("hello"), to: z.string().max(64).optional() }),
  z.object({
    t: z.literal("pending"),
    from: z.string().max(64),
    q: z.string().max(512).optional(),
    seq: z.number().int().nonnegative().optional(),
    revision: z.number().int().nonnegative(),
    ops: z.array(op).max(MAX_OPS),
  }),
  z.object({
    t: z.literal("delta"),
    from: z.string().max(64),
    q: z.string().max(512).optional(),
    seq: z.number().int().nonnegative(),
    revision: z.number().int().nonnegative(),
    add: z.array(op.extend({ id: z.number() })).max(MAX_OPS),
    remove: z.array(z.number()).max(MAX_OPS),
  }),
]);

export type Command = {
  args: z.ZodType;
  apply: (draft: never, args: never, ctx: never) => unknown;
};

/**
 * One of another tab's pending commands, checked once when it arrived; `origin` and `seq` its
 * identity in the log when the tab said it.
 */
export type Item = {
  from: string;
  /** The command's name, as the tab said it. */
  name: string;
  c: Command;
  args: unknown;
  at: number;
  origin?: string;
  seq?: number;
  /** The client id its command runs with (its replica's), when the tab said it. */
  client?: string;
};

/** What this tab knows of another tab's pending commands. */
export type Foreign = {
  revision: number;
  q: string | undefined;
  /** The `seq` of its last report taken; undefined: a report without one (ask again). */
  seq: number | undefined;
  /** By the item's id (its index in a report without ids); null: left out (refused here). */
  items: Map<number | string, { key: string; item: Item } | null>;
};
