import { z } from "zod";
import { defineModel } from "@statesync/core";

/**
 * Two versions of one small model, v2 adding a field (docs/versions.md), for the core tests of
 * the switch between model versions.
 */
export const v1 = defineModel({
  name: "ids",
  version: 1,
  state: z.object({ ids: z.array(z.string()) }),
  initial: { ids: [] },
  commands: {
    add: {
      args: z.object({ id: z.string() }),
      apply(d, a) {
        d.ids.push(a.id);
      },
    },
  },
});
export const v2 = defineModel({
  name: "ids",
  version: 2,
  state: z.object({ ids: z.array(z.string()), tags: z.array(z.string()) }),
  initial: { ids: [], tags: [] },
  commands: {
    add: {
      args: z.object({ id: z.string() }),
      apply(d: { ids: string[]; tags: string[] }, a: { id: string }) {
        d.ids.push(a.id);
      },
    },
  },
  predecessor: v1,
  migrate: (s: { ids: string[] }) => ({ ...s, tags: [] }),
});
