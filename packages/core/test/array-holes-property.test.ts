import fc from "fast-check";
import { Immer } from "immer";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { applyBatch, applyEntry } from "../src/apply.js";
import { StateValidity } from "../src/command-check.js";
import type { CommandEntry } from "../src/entry.js";
import { findNonJson } from "../src/json.js";

/**
 * The check of a checked command along what it wrote (the state before known valid) must give
 * the verdict of the whole check (the model's schema and JSON, what a replica restored from a
 * local snapshot runs) for any array mutation: length set, grown or shrunk, index writes in and
 * past range, deletes, push, pop, shift, unshift, reverse and splice, in arrays of numbers, of
 * anything (a hole passes the schema there, not the JSON check), with a length limit, of objects
 * holding arrays, and in records. A fresh-eyes trial found holes kept along the written indices
 * and refused whole: replicas at one revision with two states.
 */
const row = z.object({ v: z.number().int(), tags: z.array(z.string()) });
const state = z.object({
  nums: z.array(z.number().int()),
  opt: z.array(z.unknown()),
  bounded: z.array(z.number().int()).max(4),
  rows: z.array(row),
  rec: z.record(z.string(), z.array(z.number().int())),
  count: z.number().int(),
});
type State = z.infer<typeof state>;

const where = ["nums", "opt", "bounded", "rows", "tags0", "tags1", "recA", "recB"] as const;
type Where = (typeof where)[number];
/** An integer (a row `{ v, tags: [] }` in `rows`), or a value no array here takes. */
type Value = number | "x" | null | "undef" | 1.5;
type Op =
  | { k: "len"; w: Where; n: number }
  | { k: "set"; w: Where; i: number; value: Value }
  | { k: "del"; w: Where; i: number }
  | { k: "push"; w: Where; value: Value }
  | { k: "pop" | "shift" | "reverse"; w: Where }
  | { k: "unshift"; w: Where; value: Value }
  | { k: "splice"; w: Where; start: number; count: number; items: Value[] };

/** The array `w` names in `d`, or undefined (a row or a record key that is not there). */
function arrayAt(d: State, w: Where): unknown[] | undefined {
  if (w === "tags0" || w === "tags1") return d.rows[w === "tags0" ? 0 : 1]?.tags;
  if (w === "recA" || w === "recB") return d.rec[w === "recA" ? "a" : "b"];
  return d[w];
}

function mutate(d: State, ops: readonly Op[]): void {
  for (const op of ops) {
    const a = arrayAt(d, op.w);
    if (a === undefined) continue;
    const valueOf = (v: Value): unknown =>
      v === "undef" ? undefined : op.w === "rows" && Number.isInteger(v) ? { v, tags: [] } : v;
    switch (op.k) {
      case "len":
        a.length = op.n;
        break;
      case "set":
        a[op.i] = valueOf(op.value);
        break;
      case "del":
        delete a[op.i];
        break;
      case "push":
        a.push(valueOf(op.value));
        break;
      case "unshift":
        a.unshift(valueOf(op.value));
        break;
      case "splice":
        a.splice(op.start, op.count, ...op.items.map(valueOf));
        break;
      default:
        a[op.k]();
    }
  }
}

const model = defineModel({
  name: "array-holes",
  state,
  initial: { nums: [], opt: [], bounded: [], rows: [], rec: {}, count: 0 },
  commands: {
    tick: {
      args: z.object({}),
      apply(d) {
        d.count += 1;
      },
    },
    mutate: {
      args: z.object({ ops: z.array(z.any()) }),
      apply(d, { ops }) {
        mutate(d, ops as Op[]);
      },
    },
  },
});

const value: fc.Arbitrary<Value> = fc.oneof(
  { weight: 12, arbitrary: fc.integer({ min: -2, max: 9 }) },
  { weight: 1, arbitrary: fc.constantFrom<Value>("x", null, "undef", 1.5) },
);
const index = fc.integer({ min: 0, max: 7 });
const w = fc.constantFrom(...where);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant("len" as const), w, n: index }),
  fc.record({ k: fc.constant("set" as const), w, i: index, value }),
  fc.record({ k: fc.constant("set" as const), w, i: index, value }),
  fc.record({ k: fc.constant("del" as const), w, i: index }),
  fc.record({ k: fc.constant("push" as const), w, value }),
  fc.record({ k: fc.constantFrom("pop" as const, "shift" as const, "reverse" as const), w }),
  fc.record({ k: fc.constant("unshift" as const), w, value }),
  fc.record({
    k: fc.constant("splice" as const),
    w,
    start: index,
    count: fc.integer({ min: 0, max: 3 }),
    items: fc.array(value, { maxLength: 3 }),
  }),
);

const int = fc.integer({ min: 0, max: 9 });
const validState: fc.Arbitrary<State> = fc.record({
  nums: fc.array(int, { maxLength: 5 }),
  opt: fc.array(int, { maxLength: 5 }),
  bounded: fc.array(int, { maxLength: 4 }),
  rows: fc.array(fc.record({ v: int, tags: fc.array(fc.string(), { maxLength: 3 }) }), {
    maxLength: 3,
  }),
  rec: fc.dictionary(fc.constantFrom("a", "b", "c"), fc.array(int, { maxLength: 4 })),
  count: int,
});

const entry = (ops: Op[] | undefined, seed: number): CommandEntry => ({
  v: 3,
  kind: "command",
  ts: 1_700_000_000_000,
  client: "c",
  seed,
  name: ops ? "mutate" : "tick",
  args: ops ? { ops: ops.map((o) => JSON.parse(JSON.stringify(o)) as unknown) } : {},
});

const plain = new Immer({ autoFreeze: false });

/** The verdict of each way to apply a checked command: kept (with its state) or not. */
function verdicts(before: State, ops: Op[]) {
  const e = entry(ops, 1);
  const known = () => {
    const v = new StateValidity();
    v.reset(true);
    return v;
  };
  const whole = applyEntry(model, before, e, 2, new StateValidity());
  const along = applyEntry(model, before, e, 2, known());
  const batched = applyBatch(model, before, [{ entry: e, revision: 3, args: e.args }], 2, known());
  // After a valid command in the same draft: the shared draft's touches of two recipes.
  const first = entry(undefined, 0);
  const pair = applyBatch(
    model,
    before,
    [
      { entry: first, revision: 2, args: first.args },
      { entry: e, revision: 3, args: e.args },
    ],
    1,
    known(),
  );
  // The oracle: the recipe in a draft of Immer's own (its semantics: `delete` of an array
  // element writes undefined there, past the end too), the result checked whole.
  let copy: State | undefined;
  try {
    copy = plain.produce(before, (d) => mutate(d, ops));
  } catch {
    copy = undefined;
  }
  const oracle =
    copy !== undefined && state.safeParse(copy).success && findNonJson(copy) === undefined;
  return { whole, along, batched, pair, oracle, copy };
}

describe("the check along an array's writes", () => {
  it("finds the holes of a first growth after a second one (a counterexample of stop 21)", () => {
    // Index 4 of an empty array leaves holes from 0; the splice then moves elements up past the
    // end (holes from 5, filled at once): the scan for holes must start at the first growth.
    const before: State = { nums: [], opt: [], bounded: [], rows: [], rec: { a: [] }, count: 0 };
    const ops: Op[] = [
      { k: "set", w: "recA", i: 4, value: 0 },
      { k: "splice", w: "recA", start: 3, count: 1, items: [0, 0, 0] },
    ];
    const { whole, along, batched } = verdicts(before, ops);
    expect(whole.kind).toBe("noop");
    expect(along.kind).toBe("noop");
    expect(batched).toEqual({ kind: "failed", at: 0 });
  });

  it("keeps a command exactly when the whole check keeps it", () => {
    fc.assert(
      fc.property(validState, fc.array(op, { minLength: 1, maxLength: 4 }), (before, ops) => {
        const { whole, along, batched, pair, oracle, copy } = verdicts(before, ops);
        const kept = whole.kind === "applied";
        expect(kept).toBe(oracle);
        expect(along.kind === "applied").toBe(kept);
        // In a batch, a command that failed is run alone (its verdict is then `along`'s); one
        // that moved a draft elsewhere (aliased: an unshift of rows) fails there whatever its
        // result. Kept in the batch means kept.
        if (!kept) {
          expect(batched).toEqual({ kind: "failed", at: 0 });
          expect(pair).toEqual({ kind: "failed", at: 1 });
        }
        if (batched.kind === "applied" || pair.kind === "applied") expect(kept).toBe(true);
        if (whole.kind === "applied" && along.kind === "applied") {
          expect(along.state).toEqual(whole.state);
          expect(whole.state).toEqual(copy);
        }
        if (batched.kind === "applied") expect(batched.state).toEqual(copy);
      }),
      { numRuns: 1000 },
    );
  });
});
