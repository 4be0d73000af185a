import { z } from "zod";
import { defineModel } from "@statesync/node";

/** The counter model the JetStream tests share. */
export const counter = defineModel({
  name: "counter",
  state: z.object({ count: z.number().int(), seen: z.array(z.string()) }),
  initial: { count: 0, seen: [] },
  commands: {
    increment: {
      args: z.object({ by: z.number().int() }),
      apply(draft, args) {
        draft.count += args.by;
      },
    },
    record: {
      args: z.object({ id: z.string() }),
      apply(draft, args) {
        draft.seen.push(args.id);
      },
    },
  },
});

/**
 * The model of the fault tests and the history checker: every increment carries a unique `opId`
 * that the state records, so a run can tell exactly which updates were applied, and how often.
 * `note` is a second command (the hostile corpus publishes it raw); the corpus also names a
 * command this model does not know (`futureCommand`).
 */
export const ledger = defineModel({
  name: "ledger",
  state: z.object({
    count: z.number().int(),
    ops: z.array(z.string()),
    notes: z.array(z.string()),
  }),
  initial: { count: 0, ops: [], notes: [] },
  commands: {
    increment: {
      args: z.object({ by: z.number().int(), opId: z.string().min(1).max(64) }),
      apply(draft, args) {
        draft.count += args.by;
        draft.ops.push(args.opId);
      },
    },
    note: {
      args: z.object({ text: z.string().max(4096) }),
      apply(draft, args) {
        draft.notes.push(args.text);
      },
    },
  },
});

/** The state of {@link ledger}. */
export type LedgerState = typeof ledger.initial;
