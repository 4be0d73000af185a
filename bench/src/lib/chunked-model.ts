// The model of the chunked-snapshot benchmark: items of about 1 KB in buckets of 100, so that an
// update copies two small containers (the root and one bucket), never the whole state.
import { defineModel } from "@statesync/node";
import { z } from "zod";

export const chunkedModel = defineModel({
  name: "bench-large",
  state: z.object({
    buckets: z.record(z.string(), z.record(z.string(), z.string())),
    ticks: z.number().int(),
  }),
  initial: { buckets: {}, ticks: 0 },
  commands: {
    put: {
      args: z.object({ b: z.string(), k: z.string(), v: z.string() }),
      apply(draft, { b, k, v }) {
        (draft.buckets[b] ??= {})[k] = v;
      },
    },
    tick: {
      args: z.object({}),
      apply(draft) {
        draft.ticks += 1;
      },
    },
  },
});

/** Items per bucket. */
export const PER_BUCKET = 100;

/** The `put` arguments of item `i`: about `size` characters of value. */
export function itemArgs(i: number, size: number): { b: string; k: string; v: string } {
  const head = `item ${i} `;
  return {
    b: `b${Math.floor(i / PER_BUCKET)}`,
    k: `k${i}`,
    v:
      head +
      "abcdefghijklmnopqrstuvwxyz0123456789".repeat(Math.ceil(size / 36)).slice(head.length, size),
  };
}
