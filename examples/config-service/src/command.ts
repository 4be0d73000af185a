import type { CommandDefinition, UpdateContext } from "@statesync/core";
import type { z } from "zod";

/** The mutable draft a command's `apply` receives (Immer's `Draft<S>`). */
export type Draft<S> = Parameters<CommandDefinition<S>["apply"]>[0];

/**
 * Returns a `command(args, apply)` helper for commands on state `S` that types `apply`'s
 * arguments from the `args` zod schema (a plain object literal in `defineModel` types them `any`).
 */
export function commandsFor<S>() {
  return <A extends z.ZodType>(
    args: A,
    apply: (draft: Draft<S>, args: z.output<A>, ctx: UpdateContext) => void,
  ): CommandDefinition<S, A> => ({ args, apply });
}
