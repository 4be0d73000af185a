import fc from "fast-check";
import { enablePatches, freeze, Immer, isDraft, type Patch } from "immer";
import { describe, expect, it } from "vitest";
import { immer as statesyncImmer } from "../src/apply.js";
import { applyCheckedPatches, arrayPatchProblem, producePatched } from "../src/array-patches.js";

enablePatches();
const immer = new Immer();
immer.setAutoFreeze(true);

/** The patches applied by Immer one by one, as before (the reference). */
function oneByOne<T extends object>(state: T, patches: readonly Patch[], im = immer): T {
  return im.produce(state, (draft) => {
    for (const patch of patches) {
      const problem = arrayPatchProblem(draft, patch);
      if (problem !== undefined) throw new Error(problem);
      im.applyPatches(draft, [patch]);
    }
  });
}

/**
 * What `produce` of a fresh copy of `state` (frozen or not) gives: the state or the error, and
 * each container of the result in order, whether it is frozen and which container of the copy
 * it is (-1: a new one). Structural sharing and freezing are part of the outcome.
 */
function produced(state: unknown, frozen: boolean, f: (base: object) => object) {
  const base = JSON.parse(JSON.stringify(state)) as object;
  if (frozen) freeze(base, true);
  const order = new Map<object, number>();
  const walk = (v: unknown, visit: (o: object) => void): void => {
    if (typeof v !== "object" || v === null) return;
    visit(v);
    for (const k of Object.keys(v)) walk((v as Record<string, unknown>)[k], visit);
  };
  walk(base, (o) => order.set(o, order.size));
  try {
    const next = f(base);
    const containers: Array<[boolean, number]> = [];
    walk(next, (o) => containers.push([Object.isFrozen(o), order.get(o) ?? -1]));
    return { state: JSON.parse(JSON.stringify(next)) as unknown, containers };
  } catch (e) {
    return { error: String(e) };
  }
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
/** Patches of a state that is itself a list, including Immer's at the root itself (`[]`). */
const rootPatch = fc.oneof(
  fc.record({ op: fc.constant("add"), path: key.map((k) => [k]), value: element }),
  fc.record({ op: fc.constant("remove"), path: key.map((k) => [k]) }),
  fc.record({ op: fc.constantFrom("add", "replace"), path: fc.constant([]), value: element }),
  fc.record({ op: fc.constant("remove"), path: fc.constant([]) }),
  fc.record({
    op: fc.constant("replace"),
    path: fc.nat(8).map((i) => [i, "id"]),
    value: fc.nat(99),
  }),
  // moves in an element's own array, under a root made plain or not
  fc.record({
    op: fc.constantFrom("add", "remove"),
    path: fc.tuple(fc.nat(8), fc.nat(2)).map(([i, k]) => [i, "tags", k]),
    value: fc.string({ maxLength: 2 }),
  }),
) as fc.Arbitrary<Patch>;
/** An Immer that freezes what it produces, and one that does not (as statesync's own). */
const immerFreezing = (autoFreeze: boolean) => (autoFreeze ? immer : statesyncImmer);

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

  it("give the state (or the error), sharing and freezing one by one gives, with autoFreeze on and off (property)", () => {
    fc.assert(
      fc.property(
        fc.array(element, { maxLength: 8 }),
        fc.array(listPatch, { maxLength: 24 }),
        fc.boolean(),
        fc.boolean(),
        (list, patches, autoFreeze, frozen) => {
          const im = immerFreezing(autoFreeze);
          const state = { list, other: 0 };
          const reference = produced(state, frozen, (b) => oneByOne(b, patches, im));
          const ours = produced(state, frozen, (b) => producePatched(im, b, patches));
          expect(ours).toEqual(reference);
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it("of a state that is itself an array give what one by one gives: state or error, sharing, freezing (property)", () => {
    fc.assert(
      fc.property(
        fc.array(element, { maxLength: 8 }),
        fc.array(rootPatch, { maxLength: 24 }),
        fc.boolean(),
        fc.boolean(),
        (list, patches, autoFreeze, frozen) => {
          const im = immerFreezing(autoFreeze);
          const reference = produced(list, frozen, (b) => oneByOne(b, patches, im));
          const ours = produced(list, frozen, (b) => producePatched(im, b, patches));
          expect(ours).toEqual(reference);
        },
      ),
      { numRuns: 3_000 },
    );
  });

  it("of a state that is itself an array: applyCheckedPatches refuses a move of its draft before changing it", () => {
    const state = freeze(
      [
        { id: 1, tags: [] },
        { id: 2, tags: [] },
      ],
      true,
    );
    const patches: Patch[] = [{ op: "add", path: [0], value: { id: 0, tags: [] } }];
    const splice = Array.prototype.splice;
    let splices = 0;
    Array.prototype.splice = function (this: unknown[], ...args: unknown[]) {
      splices += 1;
      return (splice as (...a: unknown[]) => unknown[]).apply(this, args);
    };
    try {
      expect(() =>
        immer.produce(state, (d) => void applyCheckedPatches(immer, d, patches)),
      ).toThrow(/itself an array/);
    } finally {
      Array.prototype.splice = splice;
    }
    expect(splices).toBe(0);
    // at the end nothing moves: applied in the draft
    const next = immer.produce(state, (d) => {
      applyCheckedPatches(immer, d, [{ op: "add", path: [2], value: { id: 3, tags: [] } }]);
    });
    expect(next.map((e) => e.id)).toEqual([1, 2, 3]);
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
