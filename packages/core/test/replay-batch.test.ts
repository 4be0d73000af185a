import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { Replay, type StepResult } from "../src/replay.js";
import { genesisEntryOf } from "./engine-fixtures.js";

/**
 * `Replay.stepMany` applies runs of plain entries in one Immer draft. Whatever the entries and
 * however they are chunked, it must end where `step` one entry at a time ends, with the same
 * result for every entry (a failing entry stays a no-op of its own).
 */
const model = defineModel({
  name: "batch",
  state: z.object({
    n: z.number(),
    items: z.record(z.string(), z.number()),
    log: z.array(z.string()),
  }),
  initial: { n: 0, items: {}, log: [] },
  commands: {
    add: {
      args: z.object({ by: z.number().int() }),
      apply(d, { by }, ctx) {
        d.n += by;
        d.log.push(`${ctx.revision}:${by}:${Math.floor(ctx.random() * 100)}`);
        if (d.log.length > 5) d.log.shift();
      },
    },
    boom: {
      args: z.object({ at: z.number().int() }),
      apply(d, { at }) {
        d.n += 1000; // changed, then thrown: must leave no trace
        if (d.n % 3 === at % 3) throw new Error("boom");
      },
    },
  },
});

type Op =
  | { t: "set"; k: string; v: number }
  | { t: "remove"; k: string }
  | { t: "badPatch" }
  | { t: "root"; n: number }
  | { t: "add"; by: number }
  | { t: "boom"; at: number }
  | { t: "badArgs" }
  | { t: "unknownCommand" }
  | { t: "garbage" }
  | { t: "wrongBase" };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant("set" as const),
      k: fc.constantFrom("a", "b", "c"),
      v: fc.integer(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant("remove" as const), k: fc.constantFrom("a", "b") }),
  },
  { weight: 1, arbitrary: fc.constant({ t: "badPatch" as const }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("root" as const), n: fc.integer() }) },
  {
    weight: 6,
    arbitrary: fc.record({ t: fc.constant("add" as const), by: fc.integer({ min: -5, max: 5 }) }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("boom" as const), at: fc.nat(5) }) },
  { weight: 1, arbitrary: fc.constant({ t: "badArgs" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "garbage" as const }) },
  { weight: 1, arbitrary: fc.constant({ t: "wrongBase" as const }) },
);

const enc = (o: unknown) => new TextEncoder().encode(typeof o === "string" ? o : JSON.stringify(o));
const env = { v: 1, ts: 1_700_000_000_000, client: "c" };

function entries(ops: Op[], withUnknown: boolean) {
  const out = [genesisEntryOf(model)];
  ops.forEach((o, i) => {
    const revision = i + 2;
    const base = revision - 1;
    const upd = (patches: unknown[]) => ({ ...env, kind: "update", base, seed: i, patches });
    const cmd = (name: string, args: unknown) => ({
      ...env,
      kind: "command",
      seed: i * 7,
      name,
      args,
    });
    const body =
      o.t === "set"
        ? upd([{ op: "add", path: ["items", o.k], value: o.v }])
        : o.t === "remove"
          ? upd([{ op: "remove", path: ["items", o.k] }])
          : o.t === "badPatch"
            ? upd([
                { op: "replace", path: ["n"], value: 1 },
                { op: "add", path: ["missing", "x"], value: 1 },
              ])
            : o.t === "root"
              ? upd([{ op: "replace", path: [], value: { n: o.n, items: {}, log: [] } }])
              : o.t === "add"
                ? cmd("add", { by: o.by })
                : o.t === "boom"
                  ? cmd("boom", { at: o.at })
                  : o.t === "badArgs"
                    ? cmd("add", { by: "x" })
                    : o.t === "garbage"
                      ? "{not json"
                      : o.t === "wrongBase"
                        ? { ...upd([{ op: "replace", path: ["n"], value: 7 }]), base: base - 1 }
                        : cmd("nope", {});
    out.push({ revision, data: enc(body), messageId: `m${revision}` });
  });
  if (withUnknown) {
    const revision = out.length + 1;
    out.push({
      revision,
      data: enc({ ...env, kind: "command", seed: 1, name: "nope", args: {} }),
      messageId: "u",
    });
    out.push({
      revision: revision + 1,
      data: enc({ ...env, kind: "command", seed: 2, name: "add", args: { by: 1 } }),
      messageId: "v",
    });
  }
  return out;
}

const summary = (r: StepResult) =>
  r.kind === "applied"
    ? `applied:${r.entry.kind}:${r.error?.code ?? ""}`
    : r.kind === "ignored"
      ? "ignored"
      : `${r.kind}:${r.error?.code ?? ""}`;

describe("Replay.stepMany", () => {
  it("ends where step() one by one ends, with the same result per entry, however chunked", () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 40 }),
        fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 10 }),
        fc.boolean(),
        (ops, chunks, withUnknown) => {
          const log = entries(ops, withUnknown);
          const one = new Replay(model, true);
          const expected: string[] = [];
          for (const e of log) {
            const r = one.step(e);
            expected.push(summary(r));
            if (r.kind === "stall") break;
          }
          const many = new Replay(model, true);
          const actual: string[] = [];
          let i = 0;
          for (let c = 0; i < log.length; c++) {
            const size = chunks[c % chunks.length]!;
            const results = many.stepMany(log.slice(i, i + size));
            actual.push(...results.map(summary));
            i += size;
            if (results.some((r) => r.kind === "stall")) break;
          }
          expect(actual).toEqual(expected);
          expect(many.revision).toBe(one.revision);
          expect(many.state).toEqual(one.state);
          expect(Object.isFrozen(many.state)).toBe(true);
        },
      ),
      { numRuns: 500 },
    );
  });
});
