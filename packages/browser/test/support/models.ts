import { defineModel } from "@statesync/browser";
import { z } from "zod";

/** A list of notes, added one by one: the model of the browser tests that store or queue text. */
export const notes = defineModel({
  name: "notes",
  state: z.object({ notes: z.array(z.string()) }),
  initial: { notes: [] },
  commands: {
    add: {
      args: z.object({ text: z.string() }),
      apply(draft, { text }) {
        draft.notes.push(text);
      },
    },
  },
});
