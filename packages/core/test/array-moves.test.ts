import fc from "fast-check";
import { enablePatches, freeze, Immer, isDraft, type Patch } from "immer";
import { describe, expect, it } from "vitest";
import { immer as statesyncImmer } from "../src/apply.js";
import { applyCheckedPatches, arrayPatchProblem } from "../src/array-patches.js";

enablePatches();
const immer = new Immer();
immer.setAutoFreeze(true);

/** The patches applied by Immer one by one, as before (the reference). */
function oneByOne(state: object, patches: readonly Patch[]): object {
  return immer.produce(state, (draft) => {
    for (const patch of patches) {
      const problem = arrayPatchProblem(draft, patch);
      if (problem !== undefined) throw new Error(problem);
      immer.applyPatches(draft, [patch]);
    }
  });
}

const outcome = (f: () => object) => {
  try {
    return { state: JSON.parse(JSON.stringify(f())) as unknown };
  } catch (e) {
    return { error: String(e) };
  }
};

const element = fc.record({
  id: fc.nat(99),
  tags: fc.array(fc.string({ maxLength: 2 }), { maxLength: 2 }),
});
const key = fc.oneof(fc.nat(12), fc.nat(12).map(String), fc.constantFrom("-", "x", -1, "01"));
const listPatch = fc.oneof(
  fc.record({ op: fc.constant("add"), path: key.map((k) => ["list", k]), value: element }),
  fc.record({ op: fc.constant("remove"), path: key.map((k) => ["list", k]) }),
  // touches an element (a draft moved by the runs around it), or ends a run
  fc.record({
    op: fc.constant("replace"),
    path: fc.nat(8).map((i) => ["list", i, "id"]),
    value: fc.nat(99),
  }),
  fc.record({ op: fc.constant("add"), path: fc.constant(["other"]), value: fc.nat(9) }),
) as fc.Arbitrary<Patch>;

/**
 * `applyCheckedPatches` makes an array plain (its elements still drafts) before an `add` or
 * `remove` moves its elements, so the splices are native (a hostile entry of inserts at the front
 * of a long array cost every replica seconds of proxy traps per patch). It must give exactly what
 * Immer's `applyPatches` one patch at a time gives: the same state, or the same error.
 */
describe("array patches that move elements", () => {
  it("give the state (or the error) that one by one gives (property)", () => {
    fc.assert(
      fc.property(
        fc.array(element, { maxLength: 8 }),
        fc.array(listPatch, { maxLength: 24 }),
        (list, patches) => {
          const state = freeze({ list, other: 0 }, true);
          const reference = outcome(() => oneByOne(state, patches));
          const runs = outcome(() =>
            immer.produce(state, (d) => void applyCheckedPatches(immer, d, patches)),
          );
          expect(runs).toEqual(reference);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("give the same with statesync's own Immer (autoFreeze off), across several entries (property)", () => {
    fc.assert(
      fc.property(
        fc.array(element, { maxLength: 8 }),
        fc.array(fc.array(listPatch, { maxLength: 12 }), { maxLength: 4 }),
        (list, entries) => {
          const state = freeze({ list, other: 0 }, true);
          const reference = outcome(() =>
            entries.reduce((s, patches) => oneByOne(s, patches), state as object),
          );
          const batched = outcome(() =>
            statesyncImmer.produce(state, (d) => {
              for (const patches of entries) applyCheckedPatches(statesyncImmer, d, patches);
            }),
          );
          if ("error" in reference) expect(batched).toHaveProperty("error");
          else expect(batched).toEqual(reference);
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it("keeps the elements it did not change, and the state before as it was", () => {
    const list = Array.from({ length: 1_000 }, (_, i) => ({ id: i, tags: [] as string[] }));
    const state = freeze({ list, other: 0 }, true);
    const patches: Patch[] = Array.from({ length: 500 }, (_, i) => ({
      op: "add",
      path: ["list", 0],
      value: { id: -i, tags: [] },
    }));
    const next = immer.produce(state, (d) => void applyCheckedPatches(immer, d, patches));
    expect(next.list).toHaveLength(1_500);
    expect(next.list[0]).toEqual({ id: -499, tags: [] });
    expect(next.list[500]).toBe(list[0]); // the same object, not a copy
    expect(next.list[1_499]).toBe(list[999]);
    expect(state.list).toHaveLength(1_000);
    expect(Object.isFrozen(next.list)).toBe(true);
    expect(Object.isFrozen(next.list[0])).toBe(true);
  });

  it("splices no draft: each splice of one moves every element through Immer's proxy", () => {
    const list = Array.from({ length: 2_000 }, (_, i) => ({ id: i, tags: [] as string[] }));
    const state = freeze({ list, other: 0 }, true);
    // Inserts and removes near the front, with writes into the elements and elsewhere between.
    const patches: Patch[] = Array.from({ length: 300 }, (_, i): Patch => {
      if (i % 3 === 1) return { op: "replace", path: ["list", i % 5, "id"], value: i };
      if (i % 3 === 2) return { op: "replace", path: ["other"], value: i };
      return {
        op: i % 4 === 3 ? "remove" : "add",
        path: ["list", i % 7],
        value: { id: -i, tags: [] },
      };
    });
    const splice = Array.prototype.splice;
    let draftSplices = 0;
    Array.prototype.splice = function (this: unknown[], ...args: unknown[]) {
      if (isDraft(this)) draftSplices += 1;
      return (splice as (...a: unknown[]) => unknown[]).apply(this, args);
    };
    let next;
    try {
      next = immer.produce(state, (d) => void applyCheckedPatches(immer, d, patches));
    } finally {
      Array.prototype.splice = splice;
    }
    expect(draftSplices).toBe(0); // before: 100, one per add or remove
    expect(next).toEqual(oneByOne(state, patches));
  });
});
