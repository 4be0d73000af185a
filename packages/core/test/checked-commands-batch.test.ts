import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { Replay, type StepResult } from "../src/replay.js";

/**
 * Checked commands (format 3) must reach the same verdict on every replica whatever its batch
 * boundaries and wherever it started: `stepMany` in any chunks, and a replay restored at any
 * revision (knowing nothing of the state's validity), end where `step` one entry at a time ends,
 * with the same outcome per entry; and a checked command is kept exactly when the state after it
 * passes the schema. Updates and unchecked commands (format 1) may break the schema in between.
 */
const model = defineModel({
  name: "checked-batch",
  state: z.object({
    qty: z.number().nonnegative(),
    items: z.record(z.string(), z.number().nonnegative()),
    // A container with a check of its own: checked whole, never along one member.
    list: z.array(z.number().nonnegative()).max(3),
    rows: z.array(z.object({ v: z.number().nonnegative() })),
  }),
  initial: { qty: 0, items: {}, list: [], rows: [] },
  commands: {
    add: {
      args: z.object({ n: z.number().int() }),
      apply(d, { n }) {
        d.qty += n;
      },
    },
    set: {
      args: z.object({ k: z.string(), v: z.number().int() }),
      apply(d, { k, v }) {
        d.items[k] = v;
      },
    },
    push: {
      args: z.object({ v: z.number().int() }),
      apply(d, { v }) {
        d.list.push(v);
        d.rows.unshift({ v }); // moves every row: an insertion, not a write at one index
      },
    },
    shift: {
      args: z.object({}),
      apply(d) {
        d.list.shift();
        d.rows.shift();
      },
    },
    bump: {
      args: z.object({ n: z.number().int() }),
      apply(d, { n }) {
        for (const row of d.rows) row.v += n;
      },
    },
    boom: {
      args: z.object({}),
      apply(d) {
        d.qty = -1;
        throw new Error("boom");
      },
    },
  },
});

type Op =
  | { t: "cmd"; v: 1 | 3; name: "add" | "set" | "push" | "shift" | "bump" | "boom"; n: number }
  | { t: "patch"; path: Array<string | number>; value: number }
  | { t: "insert"; value: number }
  | { t: "removeRow" }
  | { t: "root" };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant("cmd" as const),
      v: fc.constantFrom(1 as const, 3 as const, 3 as const, 3 as const),
      name: fc.constantFrom(...(["add", "add", "set", "push", "shift", "bump", "boom"] as const)),
      n: fc.integer({ min: -3, max: 3 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("patch" as const),
      path: fc.constantFrom<Array<string | number>>(["qty"], ["items", "a"], ["rows", 0, "v"]),
      value: fc.integer({ min: -2, max: 2 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant("insert" as const),
      value: fc.integer({ min: -1, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ t: "removeRow" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "root" as const }) },
);

const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const env = { ts: 1_700_000_000_000, client: "c" };

function entries(ops: Op[]) {
  const genesis = {
    ...env,
    v: 1,
    kind: "genesis",
    model: model.name,
    version: model.version,
    initialHash: model.initialHash,
  };
  const out = [{ revision: 1, data: enc(genesis), messageId: "g" }];
  ops.forEach((o, i) => {
    const revision = i + 2;
    const upd = (patches: unknown[]) => ({
      ...env,
      v: 1,
      kind: "update",
      base: revision - 1,
      seed: i,
      patches,
    });
    const body =
      o.t === "cmd"
        ? {
            ...env,
            v: o.v,
            kind: "command",
            seed: i,
            name: o.name,
            args:
              o.name === "set"
                ? { k: "ab"[i % 2], v: o.n }
                : o.name === "push"
                  ? { v: o.n }
                  : o.name === "shift" || o.name === "boom"
                    ? {}
                    : { n: o.n },
          }
        : o.t === "patch"
          ? upd([{ op: "replace", path: o.path, value: o.value }])
          : o.t === "insert" // an insertion moves the rows after it (as a hostile writer may)
            ? upd([{ op: "add", path: ["rows", 0], value: { v: o.value } }])
            : o.t === "removeRow"
              ? upd([{ op: "remove", path: ["rows", 0] }])
              : upd([
                  { op: "replace", path: [], value: { qty: 1, items: {}, list: [], rows: [] } },
                ]);
    out.push({ revision, data: enc(body), messageId: `m${revision}` });
  });
  return out;
}

const summary = (r: StepResult) =>
  r.kind === "applied"
    ? `applied:${r.entry.kind}:${r.error?.code ?? ""}:${String(r.error?.details.reason ?? "")}`
    : `${r.kind}:${"error" in r ? (r.error?.code ?? "") : ""}`;

describe("checked commands, batched or not", () => {
  it("reach the same verdict per entry however chunked and wherever the replay started", () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 8 }),
        fc.nat(),
        (ops, chunks, cutSeed) => {
          const log = entries(ops);
          const one = new Replay(model, true);
          const expected: string[] = [];
          const states: unknown[] = [];
          for (const e of log) {
            const r = one.step(e);
            expected.push(summary(r));
            states.push(one.state);
            // The oracle: a checked command is kept exactly when the state after it is valid.
            const d = JSON.parse(new TextDecoder().decode(e.data)) as {
              kind: string;
              v: number;
              name: keyof typeof model.commands;
              args: never;
            };
            if (d.kind === "command" && d.v === 3 && r.kind === "applied") {
              if (r.error === undefined) {
                expect(model.state.safeParse(one.state).success).toBe(true);
              } else if (r.error.details.reason === "invalid-state") {
                const copy = structuredClone(states[states.length - 2]) as never;
                model.commands[d.name].apply(copy, d.args, undefined as never);
                expect(model.state.safeParse(copy).success).toBe(false);
              } else expect(r.error.details.reason).toBe("threw");
            }
          }
          const run = (replay: Replay<any, any>, from: number) => {
            const actual: string[] = [];
            let i = from;
            for (let c = 0; i < log.length; c++) {
              const size = chunks[c % chunks.length]!;
              actual.push(...replay.stepMany(log.slice(i, i + size)).map(summary));
              i += size;
            }
            return actual;
          };
          const many = new Replay(model, true);
          expect(run(many, 0)).toEqual(expected);
          expect(many.state).toEqual(one.state);
          expect(Object.isFrozen(many.state)).toBe(true);
          // Restored at a revision (a local snapshot), knowing nothing of its validity.
          const cut = cutSeed % log.length;
          const restored = new Replay(model, true, { state: states[cut], revision: cut + 1 });
          expect(run(restored, cut + 1)).toEqual(expected.slice(cut + 1));
          expect(restored.state).toEqual(one.state);
        },
      ),
      { numRuns: 400 },
    );
  });
});
