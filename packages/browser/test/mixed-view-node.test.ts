import { defineModel, type Immutable } from "@statesync/core";
import { expect, it } from "vitest";
import { z } from "zod/v4";
import { IncrementalView } from "../src/tabs/mixed-view.js";
import { byQueueOrder, runItems } from "../src/tabs/run-items.js";
import type { Command, Item } from "../src/tabs/shared-pending-wire.js";

// The view of the tabs' pending items is kept from one change to the next (mixed-view.ts); it
// must always equal the view computed afresh (`runItems` on the base, in push order): after a
// prefix commits, after an item commits out of the expected order, after a refusal drops one
// from the middle, after a closed tab's items leave, and when an item sorts before items shown.
const model = defineModel({
  name: "mixed",
  state: z.object({ cards: z.array(z.string()), n: z.number() }),
  initial: { cards: [], n: 0 },
  commands: {
    add: { args: z.object({ c: z.string() }), apply: (d, { c }) => void d.cards.push(c) },
    // Not commutative with add: the order of the items shows in the state.
    double: { args: z.object({}), apply: (d) => void (d.n = d.n * 2 + d.cards.length) },
    // Refused here when there is no card yet.
    pop: {
      args: z.object({}),
      apply(d) {
        if (d.cards.length === 0) throw new Error("no card");
        d.cards.pop();
      },
    },
  },
});
type State = Immutable<{ cards: string[]; n: number }>;

function rng(seed: number) {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

it("equals the view computed afresh over random sequences of changes", () => {
  const names = ["add", "add", "double", "pop"] as const;
  for (let seed = 1; seed <= 200; seed++) {
    const random = rng(seed);
    const view = new IncrementalView<State>();
    let base: State = model.initial as State;
    let revision = 0;
    let at = 0;
    let list: Item[] = [];
    const make = (from: string, at: number): Item => {
      const name = names[Math.floor(random() * names.length)]!;
      const c = model.commands[name] as unknown as Command;
      return {
        from,
        name,
        c,
        args: name === "add" ? { c: `${from}${at}` } : {},
        at,
        origin: from,
        seq: at,
      };
    };
    for (let step = 0; step < 100; step++) {
      const r = random();
      if (r < 0.35) {
        // an edit of some tab, made now: it sorts last
        list = [...list, make(`t${Math.floor(random() * 3)}`, (at += 10))];
      } else if (r < 0.45 && list.length > 0) {
        // a report arrives late: an item queued before some shown
        const item = make("late", list[Math.floor(random() * list.length)]!.at - 1);
        list = [...list, item].sort(byQueueOrder);
      } else if (r < 0.7 && list.length > 0) {
        // a prefix commits: the confirmed state has it, the list no longer
        const k = 1 + Math.floor(random() * Math.min(3, list.length));
        base = runItems(base, list.slice(0, k), revision);
        revision += 1;
        list = list.slice(k);
      } else if (r < 0.8 && list.length > 1) {
        // another tab's item commits first (out of the expected order)
        const i = 1 + Math.floor(random() * (list.length - 1));
        base = runItems(base, [list[i]!], revision);
        revision += 1;
        list = list.filter((_, j) => j !== i);
      } else if (r < 0.87 && list.length > 0) {
        // refused or discarded: leaves from the middle, the confirmed state unchanged
        const i = Math.floor(random() * list.length);
        list = list.filter((_, j) => j !== i);
      } else if (r < 0.92 && list.length > 0) {
        // a tab closed: its items leave
        const from = list[Math.floor(random() * list.length)]!.from;
        list = list.filter((item) => item.from !== from);
      } else if (r < 0.97) {
        // another writer's entry
        base = runItems(base, [make("node", at)], revision);
        revision += 1;
      } else {
        revision += 1; // an entry that changed nothing
      }
      if (random() < 0.4) continue; // several changes before the next view (a batch)
      expect(view.run(base, list, revision), `seed ${seed}, step ${step}`).toEqual(
        runItems(base, list, revision),
      );
    }
  }
});

it("reuses the last view when items commit in order or arrive last (the fast paths are taken)", () => {
  const view = new IncrementalView<State>();
  const add = model.commands.add as unknown as Command;
  const items = Array.from({ length: 10 }, (_, i): Item => ({
    from: "t",
    name: "add",
    c: add,
    args: { c: `c${i}` },
    at: i,
    origin: "t",
    seq: i,
  }));
  let base: State = model.initial as State;
  for (let n = 1; n <= 10; n++) view.run(base, items.slice(0, n), 0);
  for (let k = 1; k <= 10; k++) {
    base = runItems(base, [items[k - 1]!], k - 1);
    expect(view.run(base, items.slice(k), k)).toEqual(runItems(base, items.slice(k), k));
  }
  expect(view.counts).toEqual({ afresh: 1, appended: 9, committed: 10 });
});
