import fc from "fast-check";
import { applyPatches, enablePatches, freeze, produceWithPatches } from "immer";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { createSynchronizer, defineModel, MemoryLog } from "@statesync/core";
import { RecipeRunner, type RecipeRun } from "../src/engine/recipes.js";
import type { UpdateContext } from "../src/model.js";

enablePatches();

const card = z.object({ title: z.string(), col: z.number().int().min(0) });
const model = defineModel({
  name: "batch-board",
  state: z.object({ cards: z.record(z.string(), card), list: z.array(z.number()) }),
  initial: { cards: {}, list: [] },
  commands: {},
});
type Board = z.infer<typeof model.state>;
/** The same board with container checks, so results are checked on the whole (draft) state. */
const strict = defineModel({
  name: "batch-board-strict",
  state: z
    .object({ cards: z.record(z.string(), card), list: z.array(z.number()).max(3) })
    .refine((b) => Object.keys(b.cards).length <= 3, "at most 3 cards"),
  initial: { cards: {}, list: [] },
  commands: {},
});

const ids = fc.constantFrom("a", "b", "c", "d");
/** Recipes that succeed, throw, or leave states the schema or JSON refuses, now and then. */
const recipe: fc.Arbitrary<(d: Board) => unknown> = fc.oneof(
  fc.tuple(ids, fc.string({ maxLength: 3 })).map(([id, title]) => (d: Board) => {
    d.cards[id] = { title, col: 0 };
  }),
  fc.tuple(ids, fc.integer({ min: -1, max: 3 })).map(([id, col]) => (d: Board) => {
    const c = d.cards[id];
    if (!c) throw new Error(`no card ${id}`);
    c.col = col; // -1 is refused by the schema
    return c; // a returned draft comes back as a copy
  }),
  ids.map((id) => (d: Board) => {
    delete d.cards[id];
  }),
  fc.tuple(ids, ids).map(([from, to]) => (d: Board) => {
    const c = d.cards[from];
    if (c) d.cards[to] = c; // a draft moved to another key
  }),
  fc.tuple(ids, fc.boolean()).map(([id, bad]) => (d: Board) => {
    // A new container holding drafts read from the state.
    d.cards = { ...d.cards, [id]: { title: "s", col: bad ? 1.5 : 2 } };
  }),
  fc.integer({ min: 0, max: 9 }).map((n) => (d: Board) => {
    d.list.push(n);
    return d.list.length;
  }),
  fc.constant((d: Board) => {
    d.list.pop();
  }),
  fc.constant((d: Board) => {
    (d as unknown as { x: unknown }).x = undefined; // not JSON
  }),
  ids.map((id) => (d: Board) => {
    // Invalid for a moment, valid when the recipe returns.
    d.cards[id] = { title: "t", col: -5 };
    d.cards[id].col = 1;
  }),
  fc.constant((d: Board) => {
    d.list = [...d.list, 7];
    d.list.length = 0;
  }),
);

const ctx: UpdateContext = { revision: 1, timestamp: 0, random: () => 0.5, clientId: "c" };

/** The reference: one produce per recipe, the whole state checked, as before issue 12. */
function oneByOne(m: typeof model, fns: Array<(d: Board) => unknown>, state: Board) {
  const outcomes: Array<"ok" | "refused"> = [];
  for (const fn of fns) {
    try {
      const [next] = produceWithPatches(state, (d) => void fn(d));
      if (!m.state.safeParse(next).success) throw new Error("invalid");
      if (JSON.stringify(JSON.parse(JSON.stringify(next))) !== JSON.stringify(next)) throw 0;
      if ("x" in next) throw new Error("not JSON");
      outcomes.push("ok");
      state = next;
    } catch {
      outcomes.push("refused");
    }
  }
  return { state, outcomes };
}

describe("RecipeRunner batches (issue 12: one draft per batch)", () => {
  it.each([
    ["record and array", model],
    ["refined containers", strict as unknown as typeof model],
  ])("gives the states, patches and outcomes of one-by-one runs (%s)", (_, m) => {
    const runner = new RecipeRunner(m);
    fc.assert(
      fc.property(
        fc.array(recipe, { maxLength: 12 }),
        fc.array(recipe, { maxLength: 4 }),
        (fns, pre) => {
          const start = freeze(oneByOne(m, pre, { cards: {}, list: [] }).state, true);
          const ops: RecipeRun[] = fns.map((fn) => ({ run: (d) => fn(d as Board) }));
          const out = runner.run(ops, start, ctx);
          const ref = oneByOne(m, fns, start);
          expect(ops.map((op) => (out.failures.has(op) ? "refused" : "ok"))).toEqual(ref.outcomes);
          expect(out.state).toEqual(ref.state);
          // The entry's patches replay to the state the writer adopts.
          expect(applyPatches(start, out.patches as never)).toEqual(out.state);
          // Each result is what the recipe returned on the state the ones before it left.
          let s = start;
          ops.forEach((op, i) => {
            if (out.failures.has(op)) return;
            let r: unknown;
            s = produceWithPatches(s, (d) => {
              r = fns[i]!(d);
              if (r !== undefined && typeof r === "object") r = JSON.parse(JSON.stringify(r));
            })[0];
            expect(out.results.get(op)).toEqual(r);
          });
        },
      ),
      { numRuns: 400 },
    );
  });

  it("commits queued updates of one writer as replicas replay them (MemoryLog)", async () => {
    const log = new MemoryLog();
    const a = await createSynchronizer({ log, model, clientId: "a" });
    const b = await createSynchronizer({ log, model, clientId: "b" });
    const settled = await Promise.allSettled([
      a.update((d) => void (d.cards.a = { title: "1", col: 0 })),
      a.update((d) => void (d.cards.a!.col = -1)), // refused in the middle of the batch
      a.update((d) => void d.list.push(1)),
      a.update(() => {
        throw new Error("domain");
      }),
      a.update((d) => void (d.cards.b = { ...d.cards.a!, title: "2" })),
    ]);
    expect(settled.map((s) => s.status)).toEqual([
      "fulfilled",
      "rejected",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    await b.fetchUpdates();
    expect(b.state).toEqual(a.state);
    expect(a.state).toEqual({
      cards: { a: { title: "1", col: 0 }, b: { title: "2", col: 0 } },
      list: [1],
    });
    await a.close();
    await b.close();
  });
});
