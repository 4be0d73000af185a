import { defineModel } from "@statesync/node";
import { z } from "zod";

/**
 * A text document edited one character at a time: the state holds the document as a string,
 * and the two unconditional commands insert or delete one character at a position.
 */
export const textModel = defineModel({
  name: "bench-text",
  state: z.object({ text: z.string() }),
  initial: { text: "" },
  commands: {
    insert: {
      args: z.object({ pos: z.number().int().nonnegative(), ch: z.string().length(1) }),
      apply(draft, { pos, ch }) {
        draft.text = draft.text.slice(0, pos) + ch + draft.text.slice(pos);
      },
    },
    delete: {
      args: z.object({ pos: z.number().int().nonnegative() }),
      apply(draft, { pos }) {
        draft.text = draft.text.slice(0, pos) + draft.text.slice(pos + 1);
      },
    },
  },
});

/** One edit of the trace: a command of {@link textModel} and its arguments. */
export type Edit =
  | { command: "insert"; args: { pos: number; ch: string } }
  | { command: "delete"; args: { pos: number } };

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const LETTERS = "etaoinshrdlu cmfwypvbgkjqxz  \n";

/**
 * A deterministic editing trace of `length` single-character edits, like a person writing: a
 * cursor that moves to a random place now and then (2%), mostly typing there (about 70%), and
 * deleting the character before it (backspace) otherwise. 260,000 edits end with a document of
 * about 104,000 characters, the shape of the well-known LaTeX-paper editing traces.
 */
export function editingTrace(length: number, seed = 8): Edit[] {
  const random = prng(seed);
  const edits: Edit[] = [];
  let size = 0;
  let cursor = 0;
  for (let i = 0; i < length; i++) {
    const x = random();
    if (x < 0.02) cursor = Math.floor(random() * (size + 1));
    if (x > 0.7 && cursor > 0) {
      cursor -= 1;
      size -= 1;
      edits.push({ command: "delete", args: { pos: cursor } });
    } else {
      const ch = LETTERS[Math.floor(random() * LETTERS.length)]!;
      edits.push({ command: "insert", args: { pos: cursor, ch } });
      cursor += 1;
      size += 1;
    }
  }
  return edits;
}
