import { defineModel } from "@statesync/node";
import { z } from "zod";

/** A map of `keys` counters: entries of about 120 bytes, a state of a few KB to tens of KB. */
export const itemsModel = defineModel({
  name: "bench-items",
  state: z.object({ items: z.record(z.string(), z.number().int()) }),
  initial: { items: {} },
  commands: {
    set: {
      args: z.object({ key: z.string(), value: z.number().int() }),
      apply(draft, { key, value }) {
        draft.items[key] = value;
      },
    },
  },
});

const doc = z.object({ title: z.string(), body: z.string(), tags: z.array(z.string()) });

/** Documents added in bulk: builds a large state (10 MB) with few entries. */
export const docsModel = defineModel({
  name: "bench-docs",
  state: z.object({ docs: z.record(z.string(), doc) }),
  initial: { docs: {} },
  commands: {
    add: {
      args: z.object({ docs: z.record(z.string(), doc) }),
      apply(draft, { docs }) {
        for (const [id, d] of Object.entries(docs)) draft.docs[id] = d;
      },
    },
  },
});
