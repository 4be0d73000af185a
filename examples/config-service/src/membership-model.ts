import { defineModel, type StateSynchronizer } from "@statesync/core";
import { z } from "zod";
import { commandsFor } from "./command.js";
import { nameSchema } from "./flagd-schema.js";

const memberSchema = z.object({
  /** What the member is, e.g. `checkout-service`. */
  role: z.string().max(128),
  /** Process id, for the humans reading the list. */
  pid: z.number().int().nonnegative(),
  /** Writer's clock (ms since the epoch) when it joined and when it last sent a heartbeat. */
  joinedAt: z.number(),
  lastHeartbeat: z.number(),
  /** Heartbeats received since it joined. */
  heartbeats: z.number().int().nonnegative(),
});

/** The membership list: who is there, and when each member last said so. */
export const membershipSchema = z.object({ members: z.record(nameSchema, memberSchema) });
/** The membership list. */
export type Membership = z.infer<typeof membershipSchema>;

const command = commandsFor<Membership>();
const memberArg = { member: nameSchema };

/**
 * The `membership` model, after Pravega's membership example: members write with
 * UNCONDITIONAL updates (`updateUnconditionally`), which never conflict and never retry, so
 * many members can heartbeat at once. Timestamps come from `ctx.timestamp` (the writer's clock,
 * stored in the entry) so every replica computes the same state.
 */
export const membershipModel = defineModel({
  name: "membership",
  state: membershipSchema,
  initial: { members: {} },
  commands: {
    /** Adds (or re-adds) a member. */
    join: command(
      z.object({ ...memberArg, role: z.string().max(128), pid: z.number().int().nonnegative() }),
      (draft, args, ctx) => {
        draft.members[args.member] = {
          role: args.role,
          pid: args.pid,
          joinedAt: ctx.timestamp,
          lastHeartbeat: ctx.timestamp,
          heartbeats: 0,
        };
      },
    ),
    /** Records that a member is alive; a no-op entry (`COMMAND_FAILED`) for a non-member. */
    heartbeat: command(z.object(memberArg), (draft, args, ctx) => {
      const member = draft.members[args.member];
      if (member === undefined) throw new Error(`"${args.member}" is not a member`);
      member.lastHeartbeat = Math.max(member.lastHeartbeat, ctx.timestamp);
      member.heartbeats += 1;
    }),
    /** Removes a member. */
    leave: command(z.object(memberArg), (draft, args) => {
      delete draft.members[args.member];
    }),
  },
});

/** A replica of the membership list. */
export type MembershipSynchronizer = StateSynchronizer<Membership, typeof membershipModel.commands>;

/**
 * Members whose last heartbeat is at most `ttlMs` before `now` (the reader's clock: liveness is
 * a reading of the shared state, not part of it), sorted by name.
 */
export function liveMembers(
  membership: { readonly members: Readonly<Record<string, { readonly lastHeartbeat: number }>> },
  now: number,
  ttlMs: number,
): string[] {
  return Object.entries(membership.members)
    .filter(([, member]) => now - member.lastHeartbeat <= ttlMs)
    .map(([name]) => name)
    .sort();
}
