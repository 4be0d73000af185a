import fc from "fast-check";
import { enablePatches, isDraft, original, produce } from "immer";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { RecipeRunner, type RecipeRun } from "../src/engine/recipes.js";
import { current } from "../src/current.js";
import { runOnView } from "../src/engine/touch-recorder.js";
import { runQueued } from "../src/engine/view-runs.js";
import { deepFreeze } from "../src/freeze.js";
import { defineModel, type UpdateContext } from "../src/model.js";
import { Replay, type StepResult } from "../src/replay.js";
import { refuseThenable } from "../src/synchronous.js";
import { genesisEntryOf } from "./engine-fixtures.js";

/**
 * Commands and queued updates that share one Immer draft (a catch-up's batch, `stepMany`; the
 * writer's queued recipes, `RecipeRunner`; the optimistic view, `runQueued`) must reach what
 * one draft each reaches: the same state and the same outcome per command, on every replica.
 * Each command here is one a review found to reach another (stop 45).
 */
enablePatches();

type Item = { id: number; n: number };
type State = { items: Item[]; a: { n: number }; b: { n: number }; c: number };
/** Sloppy mode (the Function constructor's): a write into a frozen object is silent. */
const sloppyBump = new Function("item", "item.n += 1;") as (item: Item) => void;

const applies = {
  add: (d: State, i: number) => void d.items.push({ id: i, n: 0 }),
  // Reads back, through the draft, what it added: a view of a value that is frozen after it.
  addAndSet: (d: State, i: number) => {
    d.items.push({ id: i, n: 0 });
    d.items[d.items.length - 1]!.n = i;
  },
  bumpCaught: (d: State, i: number) => {
    try {
      d.items[i]!.n += 1;
    } catch {
      // breaks the determinism rule on purpose
    }
  },
  bumpSloppy: (d: State, i: number) => {
    const item = d.items[i];
    if (item) sloppyBump(item);
  },
  // A new array, read back in the same command.
  reset: (d: State, i: number) => {
    d.items = [{ id: i, n: 0 }];
    d.c = d.items.length;
  },
  seeFrozen: (d: State) => void (d.c = Object.isFrozen(d.items) ? 1 : 2),
  alias: (d: State) => void (d.b = d.a),
  // One new object at two places.
  share: (d: State, i: number) => {
    const o = { n: i };
    d.a = o;
    d.b = o;
  },
  writeA: (d: State) => void (d.a.n += 1),
  // `current`'s result used as scratch: a bug, yet strict and catching nothing.
  newestFirst: (d: State) => void (d.c = current(d).items.reverse()[0]!.id),
  // Writes into the value of a property's descriptor: alone, a draft once the item was read.
  descBump: (d: State, i: number) => {
    void d.items[i];
    const item = Object.getOwnPropertyDescriptor(d.items, i)?.value as Item | undefined;
    try {
      if (item) item.n += 1;
    } catch {
      // breaks the determinism rule on purpose
    }
  },
  // Writes through a draft reached without a view (a descriptor's value): no touch recorded.
  escape: (d: State, i: number) => {
    void d.a;
    const a = Object.getOwnPropertyDescriptor(d, "a")!.value as { n: unknown };
    a.n = i > 0 ? "not a number" : 7;
  },
  // Identities: a draft is the same each time it is read at one place, another at another place.
  same: (d: State, i: number) => {
    const item = d.items[i];
    d.c = (item === d.items[i] ? 1 : 0) + (d.a === d.b ? 2 : 0) + d.items.indexOf(item!) * 4;
  },
  // Immer's own questions about a draft.
  original: (d: State) => void (d.c = original(d.items)!.length),
  isDraft: (d: State, i: number) => void (d.c = isDraft(d.items[i]) ? 1 : 2),
} satisfies Record<string, (d: State, i: number) => void>;
type Name = keyof typeof applies;
const names = Object.keys(applies) as Name[];

const args = z.object({ i: z.number().int() });
const model = defineModel({
  name: "shared-draft-divergence",
  state: z.object({
    items: z.array(z.object({ id: z.number(), n: z.number() })),
    a: z.object({ n: z.number() }),
    b: z.object({ n: z.number() }),
    c: z.number(),
  }),
  initial: { items: [{ id: 0, n: 0 }], a: { n: 0 }, b: { n: 0 }, c: 0 } as State,
  commands: Object.fromEntries(
    names.map((name) => [
      name,
      { args, apply: (d: unknown, { i }: { i: number }) => applies[name](d as State, i) },
    ]),
  ),
});
const initial = deepFreeze(structuredClone(model.initial));

/** A command entry of `format` (3: checked; 1 and 2: unchecked). */
type Call = { name: Name; i: number; v?: 1 | 2 | 3 };

/** `calls` as a log: the genesis entry, then a command entry for each. */
function entriesOf(calls: readonly Call[]) {
  const entries = [genesisEntryOf(model)];
  calls.forEach(({ name, i, v = 3 }, k) => {
    const entry = { v, kind: "command", ts: 1, client: "c", seed: k, name, args: { i } };
    const data = new TextEncoder().encode(JSON.stringify(entry));
    entries.push({ revision: k + 2, data, messageId: `m${k + 2}` });
  });
  return entries;
}

/** The replay of `calls` as command entries, one at a time (`step`) and in one run (`stepMany`). */
function replayed(calls: readonly Call[]) {
  const entries = entriesOf(calls);
  const said = (r: StepResult) => `${r.kind} ${"error" in r ? r.error?.message : ""}`;
  const one = new Replay(model, true);
  const oneResults = entries.map((e) => said(one.step(e)));
  const many = new Replay(model, true);
  const manyResults = many.stepMany(entries).map(said);
  // The checked ones as one `commands` entry (format 4), whose commands share a draft too.
  const checked = calls.filter((c) => (c.v ?? 3) === 3);
  if (checked.length >= 2) {
    const each = new Replay(model, true);
    for (const e of entriesOf(checked)) each.step(e);
    const together = new Replay(model, true);
    together.step(entries[0]!);
    const commands = checked.map(({ name, i }, k) => ({ seed: k, name, args: { i } }));
    const entry = { v: 4, kind: "commands", ts: 1, client: "c", commands };
    const data = new TextEncoder().encode(JSON.stringify(entry));
    expect(together.step({ revision: 2, data, messageId: "all" }).kind).toBe("applied");
    expect(together.state).toEqual(each.state);
  }
  return {
    alone: { state: one.state, results: oneResults },
    shared: { state: many.state, results: manyResults },
  };
}

const ctx: UpdateContext = { revision: 1, timestamp: 0, random: () => 0.5, clientId: "c" };
const runner = new RecipeRunner(model);

/** `calls` as the writer's queued recipes: in one run (shared drafts) and one run each. */
function recipes(calls: readonly Call[]) {
  const ops: RecipeRun[] = calls.map(({ name, i }) => ({
    run: (d) => applies[name](d as State, i),
  }));
  const out = runner.run(ops, initial, ctx);
  let state = initial;
  const outcomes: string[] = [];
  for (const op of ops) {
    const one = runner.run([op], state, ctx);
    outcomes.push(one.failures.has(op) ? "failed" : "ok");
    state = one.state;
  }
  return {
    alone: { state, outcomes },
    shared: {
      state: out.state,
      outcomes: ops.map((op) => (out.failures.has(op) ? "failed" : "ok")),
    },
  };
}

/** `calls` as the optimistic view shows them (`runQueued`), and one draft each. */
function viewed(calls: readonly Call[]) {
  const run = (view: unknown, { name, i }: Call) => applies[name](view as State, i);
  let state = initial;
  for (const call of calls) {
    try {
      state = produce(state, (d) => void refuseThenable(runOnView(d, (v) => run(v, call))));
    } catch {
      // left out
    }
  }
  return { alone: state, shared: runQueued(initial, calls, run) };
}

/** Each way `calls` run in shared drafts, against one draft each. */
function expectAlike(calls: readonly Call[]) {
  const r = replayed(calls);
  expect(r.shared).toEqual(r.alone);
  const q = recipes(calls);
  expect(q.shared).toEqual(q.alone);
  const v = viewed(calls);
  expect(v.shared).toEqual(v.alone);
}

describe("commands sharing a draft reach what one draft each reaches", () => {
  it("notes a write into what an earlier command wrote and read back itself", () => {
    // The recorder of a catch-up's draft (and of the writer's) serves every command: the view
    // the first command got of its new item stayed the one handed out after the item was frozen,
    // a plain view whose refused write nothing noted (the second kept n: 1 where alone it gets 2).
    expectAlike([
      { name: "addAndSet", i: 1 },
      { name: "bumpCaught", i: 1 },
    ]);
    expectAlike([
      { name: "addAndSet", i: 1 },
      { name: "bumpSloppy", i: 1 },
    ]);
    // And it saw the array frozen, where alone it is a draft (a strict command, catching nothing).
    expectAlike([
      { name: "reset", i: 1 },
      { name: "seeFrozen", i: 0 },
    ]);
  });

  it("freezes what an unchecked command (formats 1 and 2) wrote, and ends the draft at an alias", () => {
    // In a catch-up's draft, what a command of an older format wrote stayed a plain object (and
    // a draft it put at a second place, one draft): a later command writing through one place
    // changed both, where alone it gets a draft of one. A strict command, catching nothing.
    for (const v of [1, 2] as const) {
      for (const first of ["alias", "share"] as const) {
        for (const second of [2, 3] as const) {
          expectAlike([
            { name: first, i: 5, v },
            { name: "writeA", i: 0, v: second },
          ]);
        }
      }
    }
  });

  it("runs a command that asks Immer about a draft alone", () => {
    // Immer's `original` answered with the state the shared draft started from (no item added
    // by the command before: c = 1, where alone c = 2), and `isDraft` said no of an item an
    // earlier command added (frozen in the shared draft). Strict commands, catching nothing.
    expectAlike([
      { name: "add", i: 1 },
      { name: "original", i: 0 },
    ]);
    expectAlike([
      { name: "add", i: 1 },
      { name: "isDraft", i: 1 },
    ]);
  });

  it("gives a write into what current() returned the same outcome", () => {
    // `current` copied the containers written in the draft, by earlier commands too, and left
    // the copies writable: in a shared draft the reverse went through (c = 1), alone the state's
    // own items are frozen and it throws (a no-op). Now its copies are frozen as well.
    expectAlike([
      { name: "add", i: 1 },
      { name: "newestFirst", i: 0 },
    ]);
  });

  it("notes a write into a frozen value handed out as a property descriptor's value", () => {
    // Alone, the descriptor of an item read before holds its draft; shared, it held the frozen
    // item itself (from a plain view, and from a frozen one), whose write was refused unnoted.
    expectAlike([
      { name: "add", i: 1 },
      { name: "descBump", i: 1 },
    ]);
    expectAlike([
      { name: "reset", i: 1 },
      { name: "descBump", i: 0 },
    ]);
  });

  it("checks a queued recipe that wrote through a draft reached without a view", () => {
    // The writer's shared draft checked each recipe along its touches only: a write through a
    // draft the view did not hand out was never checked, and an update that fails the schema
    // alone (VALIDATION, nothing appended) was committed.
    expectAlike([
      { name: "add", i: 1 },
      { name: "escape", i: 1 },
    ]);
    expectAlike([
      { name: "escape", i: 0 },
      { name: "writeA", i: 0 },
    ]);
  });

  it("reaches what one draft each reaches for any sequence of these commands (property)", () => {
    const call: fc.Arbitrary<Call> = fc.record({
      name: fc.constantFrom(...names),
      i: fc.nat(3),
      v: fc.constantFrom(1 as const, 2 as const, 3 as const),
    });
    fc.assert(
      fc.property(fc.array(call, { maxLength: 10 }), (calls) => expectAlike(calls)),
      { numRuns: 300 },
    );
  });
});
