import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { entryContext, immer } from "../src/apply.js";
import { RecipeRunner, type RecipeRun } from "../src/engine/recipes.js";
import { deepFreeze, freezeAlong } from "../src/freeze.js";

/** Every object reachable from `value` is frozen (the state's documented guarantee). */
function unfrozenPaths(value: unknown, path = "$", out: string[] = []): string[] {
  if (typeof value !== "object" || value === null) return out;
  if (!Object.isFrozen(value)) out.push(path);
  for (const [k, v] of Object.entries(value)) unfrozenPaths(v, `${path}.${k}`, out);
  return out;
}

const item = z.object({ v: z.number(), sub: z.object({ w: z.number() }).optional() });
type Item = z.infer<typeof item>;
interface State {
  rec: Record<string, Item>;
  arr: Item[];
  top: { n: number };
}

/** Enough members in one record that a plain freeze walk makes the runner record writes. */
const KEYS = 1_200;

function initial(): State {
  const rec: Record<string, Item> = {};
  for (let i = 0; i < KEYS; i++) rec[`k${i}`] = { v: i, sub: { w: i } };
  return { rec, arr: [{ v: 0 }, { v: 1 }, { v: 2 }], top: { n: 0 } };
}

const model = defineModel({
  name: "freeze-along",
  state: z.object({
    rec: z.record(z.string(), item),
    arr: z.array(item),
    top: z.object({ n: z.number() }),
  }),
  initial: initial(),
  commands: {},
});

type Edit = (d: State) => void;
const key = fc.integer({ min: 0, max: 5 }).map((i) => `k${i}`);
/** Writes a recipe may make, including ones Immer leaves a copy for without a patch. */
const edit: fc.Arbitrary<Edit> = fc.oneof(
  key.map((k) => (d: State) => void (d.rec[k] && (d.rec[k].v += 1))),
  // changed and changed back: Immer keeps the copy of the item and of the record, no patch
  key.map((k) => (d: State) => {
    const it = d.rec[k];
    if (!it) return;
    it.v += 1;
    it.v -= 1;
  }),
  key.map((k) => (d: State) => {
    d.rec[`${k}-new`] = { v: 1 };
    delete d.rec[`${k}-new`];
  }),
  key.map((k) => (d: State) => void (d.rec[k] && (d.rec[k].sub = { w: 7 }))),
  key.map((k) => (d: State) => {
    const it = d.rec[k];
    if (it?.sub) it.sub.w += 1;
  }),
  key.map((k) => (d: State) => void delete d.rec[k]),
  fc.tuple(key, key).map(([a, b]) => (d: State) => {
    // a draft at a second place, then written through its first
    const it = d.rec[a];
    if (!it) return;
    d.rec[b] = it;
    it.v += 10;
  }),
  key.map((k) => (d: State) => {
    // a new object written, then changed through the draft
    d.rec[k] = { v: 3, sub: { w: 3 } };
    d.rec[k].sub!.w = 4;
  }),
  key.map((k) => (d: State) => {
    // a draft taken out of a property descriptor: writes through it bypass any view
    const it = d.rec[k];
    if (!it) return;
    void it.v;
    const raw = Object.getOwnPropertyDescriptor(d.rec, k)?.value as Item | undefined;
    if (raw) raw.v = -1;
  }),
  fc.constant((d: State) => void d.arr.push({ v: 9, sub: { w: 9 } })),
  fc.constant((d: State) => void d.arr.splice(0, 1)),
  fc.constant((d: State) => {
    const it = d.arr[1];
    d.arr.splice(0, 1);
    if (it) it.v += 1;
  }),
  fc.constant((d: State) => void d.arr.reverse()),
  fc.constant((d: State) => {
    d.top.n += 1;
    d.top.n -= 1;
  }),
);

function runOf(edits: Edit[]): RecipeRun {
  return { run: (d) => edits.forEach((e) => e(d as State)) };
}

describe("freezing along the writes (freeze.ts freezeAlong, recipes.ts guided runs)", () => {
  it("an undone write leaves Immer's copy without a patch; it is frozen all the same", () => {
    const base = deepFreeze({ a: { x: 1 }, b: { y: { z: 1 } }, c: 0 });
    const [out, patches] = immer.produceWithPatches(base, (d) => {
      d.b.y.z = 2;
      d.b.y.z = 1;
      d.c = 5;
    });
    expect(patches).toEqual([{ op: "replace", path: ["c"], value: 5 }]);
    expect(out.b).not.toBe(base.b); // the copy Immer keeps
    // Freezing along the patches alone would leave out.b and out.b.y writable.
    freezeAlong(out, [["b", "y", "z"], ["b", "y", "z"], ["c"]]);
    expect(unfrozenPaths(out)).toEqual([]);
  });

  it("a written object is walked whole, even below a path another write goes through", () => {
    const base = deepFreeze({ a: { x: 1 } });
    const fresh = { inner: { deep: { n: 1 } }, other: { m: 2 } };
    const out = immer.produce(base, (d) => {
      (d as Record<string, unknown>).a = fresh;
      fresh.inner.deep.n = 3;
    });
    freezeAlong(out, [["a", "inner", "deep", "n"], ["a"]]);
    expect(unfrozenPaths(out)).toEqual([]);
  });

  it("a large state's single and batched recipes leave a deeply frozen state equal to Immer's", () => {
    const ctx = entryContext(1, 0, 1, "test");
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.array(edit, { maxLength: 4 }), { minLength: 1, maxLength: 3 }), {
          minLength: 1,
          maxLength: 6,
        }),
        (batches) => {
          const runner = new RecipeRunner(model);
          let state = model.initial as State;
          // The first update's plain freeze walks the record's 1,200 members: the rest run guided.
          state = runner.run([runOf([(d) => void (d.top.n += 1)])], state, ctx).state;
          for (const batch of batches) {
            const expected = batch.reduce<State>(
              (s, edits) => immer.produce(s, (d) => void runOf(edits).run(d, ctx)) as State,
              state,
            );
            const out = runner.run(batch.map(runOf), state, ctx);
            expect(out.failures.size).toBe(0);
            expect(out.state).toEqual(expected);
            expect(unfrozenPaths(out.state)).toEqual([]);
            state = out.state;
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
