// The model of the browser snapshot benchmark: a state of about 4 MB (64 buckets of 300
// entities), built deterministically so that the page and the Node writer agree on `initial`.
import { defineModel } from "@statesync/core";
import { z } from "zod/v4";

const BUCKETS = 64;
const PER_BUCKET = 300;

function initialState() {
  const buckets: Record<string, Record<string, { title: string; body: string; v: number }>> = {};
  for (let b = 0; b < BUCKETS; b++) {
    const bucket: Record<string, { title: string; body: string; v: number }> = {};
    for (let e = 0; e < PER_BUCKET; e++) {
      bucket[`e${e}`] = {
        title: `entity ${b}/${e}`,
        body: `${"lorem ipsum dolor sit amet ".repeat(6)}${b * PER_BUCKET + e}`,
        v: 0,
      };
    }
    buckets[`b${b}`] = bucket;
  }
  return { buckets };
}

const entity = z.object({ title: z.string(), body: z.string(), v: z.number() });

export const bigModel = defineModel({
  name: "big",
  state: z.object({ buckets: z.record(z.string(), z.record(z.string(), entity)) }),
  initial: initialState(),
  commands: {
    touch: {
      args: z.object({ n: z.number().int().nonnegative() }),
      apply(draft, { n }) {
        const item = draft.buckets[`b${n % BUCKETS}`]?.[`e${Math.floor(n / BUCKETS) % PER_BUCKET}`];
        if (item) item.v += 1;
      },
    },
  },
});
