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

/** A number, added to: the model of the tests that need no more (the browser's run in Node too). */
export const tally = defineModel({
  name: "counter",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: {
    add: {
      args: z.object({ by: z.number() }),
      apply: (draft, args) => {
        draft.n += args.by;
      },
    },
  },
});

export { ledger } from "../fixtures/hostile/ledger-model.js";
import type { ledger } from "../fixtures/hostile/ledger-model.js";

/** The state of {@link ledger}. */
export type LedgerState = typeof ledger.initial;

/** A state of named blobs: a few commands make it larger than one message. */
export const blobs = defineModel({
  name: "blobs",
  state: z.object({ count: z.number().int(), items: z.record(z.string(), z.string()) }),
  initial: { count: 0, items: {} },
  commands: {
    put: {
      args: z.object({ key: z.string(), value: z.string() }),
      apply(draft, { key, value }) {
        draft.items[key] = value;
      },
    },
    increment: {
      args: z.object({}),
      apply(draft) {
        draft.count += 1;
      },
    },
  },
});
