import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkEnvelope } from "../src/entry.js";

/**
 * `decodeEntry` validates `update` and `command` envelopes with a hand-rolled fast path and falls
 * back to zod when unsure. Both must accept exactly the same inputs and yield equal entries.
 */
const tricky = fc.constantFrom<unknown>(
  0,
  -0,
  1,
  -1,
  1.5,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53,
  1e300,
  "",
  "x",
  "é".repeat(256),
  "a".repeat(257),
  "😀".repeat(129),
  "😀".repeat(257),
  null,
  true,
  [],
  {},
  ["a", 1],
);
const count = fc.oneof(fc.nat(), fc.integer(), tricky);
const str = fc.oneof(fc.string({ maxLength: 8 }), tricky);
const key = fc.oneof(fc.string({ maxLength: 4 }), fc.nat({ max: 9 }), tricky);
const patch = fc.oneof(
  fc.record(
    {
      op: fc.oneof(fc.constantFrom("add", "remove", "replace", "move"), tricky),
      path: fc.oneof(fc.array(key, { maxLength: 3 }), tricky),
      value: fc.jsonValue({ maxDepth: 2 }),
      extra: fc.nat(),
    },
    { requiredKeys: [] },
  ),
  tricky,
);
const call = fc.oneof(
  fc.record(
    { name: str, args: fc.jsonValue({ maxDepth: 2 }), extra: fc.nat() },
    { requiredKeys: [] },
  ),
  tricky,
);
const envelope = fc.record(
  {
    v: fc.oneof(fc.constant(1), tricky),
    kind: fc.oneof(fc.constantFrom("update", "command", "genesis", "snapshot"), tricky),
    model: str,
    version: count,
    initialHash: fc.oneof(fc.constantFrom("a".repeat(64), "A".repeat(64), "0".repeat(63)), tricky),
    state: fc.jsonValue({ maxDepth: 2 }),
    recent: fc.oneof(
      fc.array(fc.oneof(fc.tuple(str, count, count), fc.array(count, { maxLength: 4 }), tricky), {
        maxLength: 3,
      }),
      tricky,
    ),
    ts: count,
    client: str,
    base: count,
    seed: count,
    patches: fc.oneof(fc.array(patch, { maxLength: 3 }), tricky),
    commands: fc.oneof(fc.array(call, { maxLength: 2 }), tricky),
    name: str,
    args: fc.jsonValue({ maxDepth: 2 }),
    extra: fc.nat(),
  },
  { requiredKeys: [] },
);
/** Mostly valid envelopes with one field perturbed, so the fast path is exercised both ways. */
const nearlyValid = fc
  .tuple(
    fc.constantFrom("update", "command", "snapshot"),
    fc.nat(),
    fc.string({ maxLength: 8 }),
    fc.array(
      fc.record({
        op: fc.constantFrom("add", "remove", "replace"),
        path: fc.array(fc.oneof(fc.string({ maxLength: 4 }), fc.nat({ max: 9 })), { maxLength: 3 }),
        value: fc.jsonValue({ maxDepth: 2 }),
      }),
      { maxLength: 3 },
    ),
    fc.option(
      fc.constantFrom(
        ...["v", "ts", "client", "seed", "base", "name", "patches", "args"],
        ...["model", "version", "initialHash", "state", "recent"],
      ),
    ),
    tricky,
  )
  .map(([kind, n, s, patches, perturb, bad]) => {
    const e: Record<string, unknown> =
      kind === "update"
        ? { v: 1, kind, ts: n, client: s, base: n, seed: n, patches }
        : kind === "snapshot"
          ? {
              ...{ v: 1, kind, ts: n, client: s, base: n, model: s || "m", version: n },
              ...{ initialHash: "ab".repeat(32), state: patches, recent: [[s, n, n]] },
            }
          : { v: 1, kind, ts: n, client: s, seed: n, name: s || "c", args: patches };
    if (perturb !== null) e[perturb] = bad;
    return e;
  });

function same(raw: object) {
  const fast = checkEnvelope(raw, true);
  const zod = checkEnvelope(raw, false);
  expect(fast.ok).toBe(zod.ok);
  if (fast.ok && zod.ok) expect(fast.entry).toEqual(zod.entry);
  if (!fast.ok && !zod.ok) expect(fast.error.message).toBe(zod.error.message);
}

describe("entry envelope fast path", () => {
  it("accepts exactly what the zod schema accepts (random envelopes)", () => {
    fc.assert(
      fc.property(envelope, (raw) => same(JSON.parse(JSON.stringify(raw)) as object)),
      { numRuns: 3000 },
    );
  });

  it("accepts exactly what the zod schema accepts (nearly valid envelopes)", () => {
    fc.assert(
      fc.property(nearlyValid, (raw) => same(JSON.parse(JSON.stringify(raw)) as object)),
      { numRuns: 3000 },
    );
  });

  it("falls back to zod for keys zod would strip, and for __proto__", () => {
    const base = { v: 1, kind: "command", ts: 1, client: "c", seed: 1, name: "n", args: {} };
    same({ ...base, extra: 1 });
    same(
      JSON.parse(
        `{"v":1,"kind":"command","ts":1,"client":"c","seed":1,"name":"n","args":{},"__proto__":{}}`,
      ),
    );
    same({
      v: 1,
      kind: "update",
      ts: 1,
      client: "c",
      base: 0,
      seed: 1,
      patches: [{ op: "add", path: ["__proto__"], value: 1 }],
    });
    same({
      v: 1,
      kind: "update",
      ts: 1,
      client: "c",
      base: 0,
      seed: 1,
      patches: [{ op: "add", path: ["a"], x: 1 }],
    });
  });
});
