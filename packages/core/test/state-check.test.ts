import fc from "fast-check";
import { enablePatches, freeze, produceWithPatches } from "immer";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { StateChecker } from "../src/engine/state-check.js";

enablePatches();

const entity = z.object({
  name: z.string().min(1),
  count: z.number().int(),
  note: z.string().optional(),
});
const schemas = {
  plain: z.object({
    items: z.record(z.string(), entity),
    list: z.array(z.number()),
    top: z.number(),
    maybe: z.string().nullable().optional(),
  }),
  checked: z.object({
    items: z.record(z.string().regex(/^e\d+$/), entity).refine((r) => Object.keys(r).length <= 6),
    list: z.array(z.number()).max(4),
    top: z.number().min(0),
    maybe: z.string().nullable().optional(),
  }),
  // Leaves that look bare but are not (a string format, a coercion, a custom error): parsed.
  formats: z.object({
    items: z.record(z.string(), entity.extend({ note: z.email().optional() })),
    list: z.array(z.coerce.string()),
    top: z.number({ error: "a number" }),
    maybe: z.email().nullable().optional(),
  }),
  // A record keyed by an enum needs every key (zod 4): removing one breaks it (a fresh-eyes
  // trial: the check along the path let the removal pass, while a replica that checked the whole
  // state refused it, so replicas differed); a partial record does not.
  exhaustive: z.object({
    items: z.record(z.enum(["e1", "e2"]), entity),
    list: z.array(z.number()),
    top: z.number(),
    maybe: z.string().nullable().optional(),
  }),
  partial: z.object({
    items: z.partialRecord(z.enum(["e1", "e2", "e3", "e7"]), entity),
    list: z.array(z.number()),
    top: z.number(),
    maybe: z.string().nullable().optional(),
  }),
  strict: z.strictObject({
    items: z.record(z.string(), z.strictObject({ name: z.string(), count: z.number() })),
    list: z.array(z.number().int()),
    top: z.number(),
  }),
};

type Op =
  | { k: "setCount"; id: string; v: unknown }
  | { k: "setName"; id: string; v: unknown }
  | { k: "add"; id: string; name: unknown }
  | { k: "remove"; id: string }
  | { k: "dropField"; id: string; field: string }
  | { k: "extraKey"; id: string }
  | { k: "push"; v: unknown }
  | { k: "pop" }
  | { k: "top"; v: unknown }
  | { k: "rootExtra" }
  | { k: "maybe"; v: unknown };

const id = fc.constantFrom("e1", "e2", "e3", "x9", "e7");
const value = fc.oneof(
  fc.integer({ min: -3, max: 9 }),
  fc.string({ maxLength: 2 }),
  fc.constant(null),
  fc.double(),
);
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ k: fc.constant("setCount" as const), id, v: value }),
  fc.record({ k: fc.constant("setName" as const), id, v: value }),
  fc.record({ k: fc.constant("add" as const), id, name: value }),
  fc.record({ k: fc.constant("remove" as const), id }),
  fc.record({
    k: fc.constant("dropField" as const),
    id,
    field: fc.constantFrom("name", "count", "note"),
  }),
  fc.record({ k: fc.constant("extraKey" as const), id }),
  fc.record({ k: fc.constant("push" as const), v: value }),
  fc.constant({ k: "pop" as const }),
  fc.record({ k: fc.constant("top" as const), v: value }),
  fc.constant({ k: "rootExtra" as const }),
  fc.record({ k: fc.constant("maybe" as const), v: value }),
);

function apply(d: any, o: Op): void {
  const e =
    d.items[
      o.k === "push" || o.k === "pop" || o.k === "top" || o.k === "rootExtra" || o.k === "maybe"
        ? ""
        : o.id
    ];
  switch (o.k) {
    case "setCount":
      if (e) e.count = o.v;
      break;
    case "setName":
      if (e) e.name = o.v;
      break;
    case "add":
      d.items[o.id] = { name: o.name, count: 1 };
      break;
    case "remove":
      delete d.items[o.id];
      break;
    case "dropField":
      if (e) delete e[o.field];
      break;
    case "extraKey":
      if (e) e.extra = 1;
      break;
    case "push":
      d.list.push(o.v);
      break;
    case "pop":
      d.list.pop();
      break;
    case "top":
      d.top = o.v;
      break;
    case "rootExtra":
      d.other = 1;
      break;
    case "maybe":
      d.maybe = o.v;
      break;
  }
}

describe("StateChecker: a check along the patched paths gives the whole schema's verdict", () => {
  for (const [name, schema] of Object.entries(schemas)) {
    it(`agrees with safeParse of the whole state (${name})`, () => {
      const initial = freeze(
        {
          items: { e1: { name: "a", count: 1 }, e2: { name: "b", count: 2 } },
          list: [1, 2],
          top: 1,
        },
        true,
      );
      expect(schema.safeParse(initial).success).toBe(true);
      const checker = new StateChecker<unknown>(schema as z.ZodType<unknown>);
      fc.assert(
        fc.property(fc.array(op, { minLength: 1, maxLength: 4 }), (ops) => {
          const [after, patches] = produceWithPatches(initial, (d) => {
            for (const o of ops) apply(d, o);
          });
          if (patches.length === 0) return;
          const whole = schema.safeParse(after).success;
          let local = true;
          try {
            checker.check(initial, after, patches);
          } catch (e) {
            expect((e as { code?: string }).code).toBe("VALIDATION");
            local = false;
          }
          expect(local).toBe(whole);
        }),
        { numRuns: 600 },
      );
    });
  }
});
