import { applyPatches, freeze, isDraft, produce } from "immer";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { applyBatch } from "../src/apply.js";
// From the source, as `applyBatch`: the view's key for the draft is one module's own symbol.
import { current } from "../src/current.js";
import { runOnView } from "../src/engine/touch-recorder.js";
import type { CommandEntry, UpdateEntry } from "../src/entry.js";
import { StateValidity } from "../src/command-check.js";

type State = { items: Array<{ id: string; n: number }> };
const base: State = freeze({ items: [{ id: "a", n: 1 }] }, true);

describe("current (plain data of a command's draft)", () => {
  it("reads a recorder's view as plain data: the state's own object where nothing was written", () => {
    produce(base, (draft) => {
      runOnView(draft, (view) => {
        const now = current(view as State);
        expect(isDraft(now)).toBe(false);
        expect(now).toBe(base);
        expect(current((view as State).items)).toBe(base.items);
      });
    });
  });

  it("reflects what was written before it, patches applied to the same draft included", () => {
    produce(base, (draft) => {
      applyPatches(draft, [{ op: "add", path: ["items", 1], value: { id: "p", n: 2 } }]);
      runOnView(draft, (view) => {
        (view as State).items[0]!.n = 5;
        const now = current(view as State);
        expect(now).toEqual({
          items: [
            { id: "a", n: 5 },
            { id: "p", n: 2 },
          ],
        });
        expect(isDraft(now.items[0])).toBe(false);
      });
    });
  });

  it("returns a frozen value that is no draft as it is, and copies another", () => {
    expect(current(base.items[0])).toBe(base.items[0]);
    const loose = JSON.parse('{"__proto__": {"n": 1}, "list": [{"n": 2}]}') as object;
    const copy = current(loose);
    expect(copy).not.toBe(loose);
    expect(Object.keys(copy)).toEqual(["__proto__", "list"]);
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype);
    expect(JSON.stringify(copy)).toBe(JSON.stringify(loose));
    expect(current(7)).toBe(7);
  });

  it("keeps a command that reads with it in the catch-up's shared draft, after patches", () => {
    // Immer's own `current` on the view reads through it and marks the command as having reached
    // a draft without a view (`escaped`): the shared draft failed at it, and every such command
    // ran alone.
    const model = defineModel({
      name: "current-batch",
      state: z.object({ items: z.array(z.object({ id: z.string(), n: z.number() })) }),
      initial: { items: [] },
      commands: {
        add: {
          args: z.object({ id: z.string() }),
          apply(draft, { id }) {
            if (current(draft).items.some((i) => i.id === id)) throw new Error(`${id} is taken`);
            draft.items.push({ id, n: 0 });
          },
        },
      },
    });
    const command = (id: string, seed: number): CommandEntry => ({
      v: 3,
      kind: "command",
      ts: 1_700_000_000_000,
      client: "c",
      seed,
      name: "add",
      args: { id },
    });
    const update: UpdateEntry = {
      v: 1,
      kind: "update",
      ts: 1_700_000_000_000,
      client: "c",
      base: 2,
      seed: 0,
      patches: [{ op: "add", path: ["items", 2], value: { id: "p", n: 1 } }],
    };
    const validity = new StateValidity();
    validity.reset(true);
    const items = [
      { entry: command("b", 1), revision: 2, args: { id: "b" } },
      { entry: update, revision: 3 },
      { entry: command("c", 2), revision: 4, args: { id: "c" } },
    ];
    const out = applyBatch(model, base, items, 1, validity);
    expect(out).toMatchObject({ kind: "applied" });
    const state = (out as { state: State }).state;
    expect(state.items.map((i) => i.id)).toEqual(["a", "b", "p", "c"]);
    // A command after the patch sees what it added: "p" is taken.
    const again = [...items, { entry: command("p", 3), revision: 5, args: { id: "p" } }];
    expect(applyBatch(model, base, again, 1, validity)).toEqual({ kind: "failed", at: 3 });
  });
});
