import fc from "fast-check";
import { freeze, produce } from "immer";
import { describe, expect, it } from "vitest";
import { current } from "../../src/current.js";
import { runOnView } from "../../src/engine/touch-recorder.js";
import { runQueued } from "../../src/engine/view-runs.js";
import { refuseThenable } from "../../src/synchronous.js";

/**
 * The views of queued updates (the optimistic view, other tabs' pending updates) run them in
 * shared drafts (`runQueued`); what they show must be what one draft per update gives, the
 * updates that throw left out: each update is committed on its own state.
 */
type State = { items: Array<{ id: string; n: number }>; a: { x: number }; b: { x: number } };
const initial: State = freeze({ items: [], a: { x: 0 }, b: { x: 0 } }, true);

type Op =
  | { kind: "push"; id: string }
  | { kind: "pushNew"; id: string } // refuses an id it finds in `current(draft)`
  | { kind: "bump"; i: number } // writes into an item, one an earlier update may have pushed
  | { kind: "bumpCaught"; i: number } // the same, catching what the write throws
  | { kind: "bumpSloppy"; i: number } // the same in sloppy mode, where a refused write is silent
  | { kind: "seeFrozen"; i: number } // writes down whether an item looks frozen
  | { kind: "remove"; i: number }
  | { kind: "alias" } // d.b = d.a: one draft at two places
  | { kind: "writeA" }
  | { kind: "boom" }
  | { kind: "async" };

function run(view: unknown, op: Op): unknown {
  const d = view as State;
  switch (op.kind) {
    case "push":
      d.items.push({ id: op.id, n: 0 });
      return;
    case "pushNew":
      if (current(d).items.some((i) => i.id === op.id)) throw new Error(`${op.id} is taken`);
      d.items.push({ id: op.id, n: 0 });
      return;
    case "bump": {
      const item = d.items[op.i];
      if (item) item.n += 1;
      return;
    }
    case "bumpCaught": {
      const item = d.items[op.i];
      try {
        if (item) item.n += 1;
      } catch {
        // a command breaking the determinism rule (README): it must not catch its own writes
      }
      return;
    }
    case "bumpSloppy": {
      const item = d.items[op.i];
      if (item) sloppyBump(item);
      return;
    }
    case "seeFrozen": {
      const item = d.items[op.i];
      if (item) d.a.x = Object.isFrozen(item) ? 100 : 200;
      return;
    }
    case "remove":
      d.items.splice(op.i, 1);
      return;
    case "alias":
      d.b = d.a;
      return;
    case "writeA":
      d.a.x += 1;
      return;
    case "boom":
      throw new Error("boom");
    case "async":
      return Promise.resolve();
  }
}

/** A sloppy-mode function (the Function constructor's): a write into a frozen object is silent. */
const sloppyBump = new Function("item", "item.n += 1;") as (item: { n: number }) => void;

/** One draft per op, the ones that throw (or return a promise) left out: the reference. */
function oneByOne(state: State, ops: readonly Op[]): State {
  let next = state;
  for (const op of ops) {
    try {
      next = produce(next, (draft) => {
        refuseThenable(runOnView(draft, (view) => run(view, op)));
      });
    } catch {
      // left out
    }
  }
  return next;
}

const id = fc.constantFrom("p", "q", "r");
const index = fc.integer({ min: 0, max: 3 });
const op: fc.Arbitrary<Op> = fc.oneof(
  id.map((id) => ({ kind: "push" as const, id })),
  id.map((id) => ({ kind: "pushNew" as const, id })),
  index.map((i) => ({ kind: "bump" as const, i })),
  index.map((i) => ({ kind: "bumpCaught" as const, i })),
  index.map((i) => ({ kind: "bumpSloppy" as const, i })),
  index.map((i) => ({ kind: "seeFrozen" as const, i })),
  index.map((i) => ({ kind: "remove" as const, i })),
  fc.constantFrom<Op>({ kind: "alias" }, { kind: "writeA" }, { kind: "boom" }, { kind: "async" }),
);

describe("queued updates in shared drafts (runQueued)", () => {
  it("shows what one draft per update shows, for any sequence of updates", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        expect(runQueued(initial, ops, run)).toEqual(oneByOne(initial, ops));
      }),
      { numRuns: 500 },
    );
  });

  it("does not let a write through one place of an aliased draft reach the other", () => {
    // In one draft for all, d.b and d.a were one draft: the write of the second update showed
    // at both places, where it committed at one (each update is applied on its own state).
    const ops: Op[] = [{ kind: "alias" }, { kind: "writeA" }];
    expect(runQueued(initial, ops, run)).toEqual({ ...initial, a: { x: 1 }, b: { x: 0 } });
  });

  it("hands a later update what an earlier one wrote as it is (frozen), not a copy per read", () => {
    let seen: unknown;
    let read: unknown;
    runQueued(initial, ["first", "second"], (view, step) => {
      const d = view as State;
      if (step === "first") d.items.push({ id: "p", n: 0 });
      else [seen, read] = [current(d).items[0], current(d).items[0]];
    });
    expect(Object.isFrozen(seen)).toBe(true);
    expect(read).toBe(seen);
  });

  it("runs an update again alone when it caught, or sloppy mode hid, a write refused in the shared draft", () => {
    // What an earlier update wrote is frozen in the shared draft; alone, the update gets a draft
    // of it. A command that swallowed the refusal showed n: 0 in the view and committed n: 1.
    for (const kind of ["bumpCaught", "bumpSloppy"] as const) {
      const ops: Op[] = [
        { kind: "push", id: "p" },
        { kind, i: 0 },
        { kind: "push", id: "q" },
      ];
      expect(runQueued(initial, ops, run).items).toEqual([
        { id: "p", n: 1 },
        { id: "q", n: 0 },
      ]);
    }
  });

  it("does not let an update see that an earlier one's values are frozen in the shared draft", () => {
    const ops: Op[] = [
      { kind: "push", id: "p" },
      { kind: "seeFrozen", i: 0 },
    ];
    expect(runQueued(initial, ops, run).a).toEqual({ x: 200 });
  });

  it("runs an update that writes into what an earlier one wrote in a draft of its own", () => {
    const ops: Op[] = [
      { kind: "push", id: "p" },
      { kind: "bump", i: 0 },
      { kind: "push", id: "q" },
    ];
    expect(runQueued(initial, ops, run).items).toEqual([
      { id: "p", n: 1 },
      { id: "q", n: 0 },
    ]);
  });
});
