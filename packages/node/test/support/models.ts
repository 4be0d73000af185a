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

export { ledger } from "../fixtures/hostile/ledger-model.js";
import type { ledger } from "../fixtures/hostile/ledger-model.js";

/** The state of {@link ledger}. */
export type LedgerState = typeof ledger.initial;
