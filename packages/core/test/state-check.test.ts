import fc from "fast-check";
import { current, enablePatches, freeze, produce, produceWithPatches, type Patch } from "immer";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { StateChecker } from "../src/engine/state-check.js";
import { TouchRecorder } from "../src/engine/touch-recorder.js";
import { withValues } from "../src/engine/touch-values.js";

enablePatches();

/** The schemas the property test runs, built with a zod 4 API (`z`: this one, or another copy). */
export function schemasOf(z: typeof import("zod/v4").z) {
  const entity = z.object({
    name: z.string().min(1),
    count: z.number().int(),
    note: z.string().optional(),
  });
  return {
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
    // trial: the check along the path let the removal pass, while a replica that checked the
    // whole state refused it, so replicas differed); a partial record does not.
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
    // A catchall parses the undeclared keys there are: removing one (`extra`, `other`) is no
    // failure, though the catchall refuses `undefined` (it was refused for sure, on the replicas
    // that checked along the writes only).
    catchall: z
      .object({
        items: z.record(z.string(), entity.catchall(z.number())),
        list: z.array(z.number()),
        top: z.number(),
        maybe: z.string().nullable().optional(),
      })
      .catchall(z.number()),
    // An absent key is not `undefined` to an object's parse: an optional key is not parsed (or
    // its issues are dropped), whatever its refinement makes of `undefined`; and one not
    // optional-in fails absent in zod 4.2 on though its schema takes `undefined`.
    absentKeys: z.object({
      items: z.record(
        z.string(),
        z.object({
          name: z.union([z.string().min(1), z.undefined()]),
          count: z.unknown(),
          note: z
            .string()
            .optional()
            .refine((v) => v !== undefined, "a note, when parsed alone"),
        }),
      ),
      list: z.array(z.number()),
      top: z.any(),
      maybe: z.string().nullable().optional(),
    }),
    wrappers: z.object({
      items: z.record(
        z.string(),
        z.object({
          name: z.string().min(1).default("x").optional(),
          count: z.number().int().catch(0),
          note: z.string().default("d"),
        }),
      ),
      list: z.array(z.number().nullable()),
      top: z.number().prefault(0),
      maybe: z.string().nullable().optional(),
    }),
    // A key schema that makes a key `__proto__`: zod 4 leaves that member out, unparsed.
    protoKey: z.object({
      items: z.record(
        z.string().transform((k) => (k === "x9" ? "__proto__" : k)),
        entity,
      ),
      list: z.array(z.number()),
      top: z.number(),
      maybe: z.string().nullable().optional(),
    }),
  };
}

/** The state each property run starts from: valid for its schema. */
export function initialOf(name: string): unknown {
  const e1: Record<string, unknown> = { name: "a", count: 1 };
  const root: Record<string, unknown> = {};
  if (name === "catchall") {
    e1.extra = 1;
    root.other = 1;
  }
  if (name === "absentKeys" || name === "wrappers") e1.note = "n";
  return { items: { e1, e2: { name: "b", count: 2 } }, list: [1, 2], top: 1, ...root };
}

const schemas = schemasOf(z);

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
  | { k: "rootExtra"; v: unknown }
  | { k: "dropRoot" }
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
    field: fc.constantFrom("name", "count", "note", "extra"),
  }),
  fc.record({ k: fc.constant("extraKey" as const), id }),
  fc.record({ k: fc.constant("push" as const), v: value }),
  fc.constant({ k: "pop" as const }),
  fc.record({ k: fc.constant("top" as const), v: value }),
  fc.record({ k: fc.constant("rootExtra" as const), v: value }),
  fc.constant({ k: "dropRoot" as const }),
  fc.record({ k: fc.constant("maybe" as const), v: value }),
);

function apply(d: any, o: Op): void {
  const e = d.items["id" in o ? o.id : ""];
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
      d.other = o.v;
      break;
    case "dropRoot":
      delete d.other;
      break;
    case "maybe":
      d.maybe = o.v;
      break;
  }
}

describe("StateChecker: a check along the patched paths gives the whole schema's verdict", () => {
  for (const [name, schema] of Object.entries(schemas)) {
    it(`agrees with safeParse of the whole state (${name})`, () => {
      checkAgainstWhole(schema as z.ZodType<unknown>, initialOf(name), 600);
    });
  }

  it("names a strict object's undeclared key as zod does: unrecognized, at the object", () => {
    const schema = schemas.strict as z.ZodType<unknown>;
    const initial = freeze(initialOf("strict"), true);
    const [after, patches] = produceWithPatches(initial, (d: any) => {
      d.items.e1.extra = 1;
    });
    const error = refusal(new StateChecker<unknown>(schema), initial, after, patches);
    expect(error?.cause.issues.map((i) => [i.code, i.path])).toEqual([
      ["unrecognized_keys", ["items", "e1"]],
    ]);
  });
});

/** The `VALIDATION` error `checker.check` throws, or undefined when it passes. */
function refusal(
  checker: StateChecker<unknown>,
  initial: unknown,
  after: unknown,
  patches: readonly Patch[],
): { code: string; cause: z.ZodError } | undefined {
  try {
    checker.check(initial, after, patches);
    return undefined;
  } catch (e) {
    return e as { code: string; cause: z.ZodError };
  }
}

/**
 * Runs random ops on `initial` and compares the checker's verdict with `schema.safeParse` of the
 * whole state; a refusal's issues must be the whole parse's (same codes, same paths). Twice: on
 * Immer's patches (a conditional update), and on the places a `TouchRecorder` saw written, read
 * back by `withValues` (a checked command, a recipe of a batch).
 */
export function checkAgainstWhole(schema: z.ZodType<unknown>, start: unknown, numRuns: number) {
  const initial = freeze(start, true);
  expect(schema.safeParse(initial).success).toBe(true);
  const checker = new StateChecker<unknown>(schema);
  const compare = (after: unknown, patches: readonly Patch[]) => {
    const whole = schema.safeParse(after);
    const error = refusal(checker, initial, after, patches);
    expect(error === undefined).toBe(whole.success);
    if (error === undefined || whole.success) return;
    expect(error.code).toBe("VALIDATION");
    const said = (i: { code: string; path: PropertyKey[] }) => JSON.stringify([i.code, i.path]);
    const wholeIssues = new Set(whole.error.issues.map(said));
    for (const issue of error.cause.issues) expect(wholeIssues).toContain(said(issue));
  };
  fc.assert(
    fc.property(fc.array(op, { minLength: 1, maxLength: 4 }), (ops) => {
      const [after, patches] = produceWithPatches(initial, (d) => {
        for (const o of ops) apply(d, o);
      });
      if (patches.length > 0) compare(after, patches);
      produce(initial, (d) => {
        const recorder = new TouchRecorder();
        const view = recorder.wrap(d);
        for (const o of ops) apply(view, o);
        const touches = recorder.take();
        if (touches.length > 0) compare(current(d), withValues(d, touches));
      });
    }),
    { numRuns },
  );
}
