import fc from "fast-check";
import { enablePatches, freeze, Immer, isDraft, type Patch } from "immer";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { Replay, type StepResult } from "../src/replay.js";
import { genesisEntryOf } from "./engine-fixtures.js";

/**
 * A state that is itself an array: an `add` or `remove` patch that moves its elements is spliced
 * natively too (`producePatched` holds the state in an object, so its draft can be made plain).
 * Before, its draft was spliced through Immer's proxy: a hostile entry of 2,000 inserts at the
 * front of a 10,000-element root array held every replica's CPU for minutes. In a catch-up's
 * shared draft (`applyBatch`), such an entry fails the draft and is applied alone, so a command
 * after it still runs on the draft it gets one entry at a time.
 */
enablePatches();
const model = defineModel({
  name: "root-moves",
  state: z.array(z.unknown()),
  initial: Array.from({ length: 200 }, (_, i) => ({ id: i })),
  commands: {
    drop: {
      args: z.object({ i: z.number().int() }),
      apply(d, { i }) {
        delete d[i];
      },
    },
    count: {
      args: z.object({}),
      apply(d) {
        d.push(d.filter(() => true).length); // skips holes, not `undefined`
      },
    },
    define: {
      args: z.object({ i: z.number().int() }),
      apply(d, { i }) {
        const desc = { value: 7, writable: true, enumerable: true, configurable: true };
        Object.defineProperty(d, i, desc);
      },
    },
    bump: {
      args: z.object({ i: z.number().int() }),
      apply(d, { i }) {
        const e = d[i];
        if (typeof e === "object" && e !== null) (e as { id: number }).id += 1;
      },
    },
  },
});

const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const env = { ts: 1_700_000_000_000, client: "c" };

type Body =
  { kind: "update"; patches: Patch[] } | { kind: "command"; v: 1 | 3; name: string; args: object };

/** The genesis entry, then `bodies` as entries, each based on the revision before it. */
function log(bodies: readonly Body[]) {
  const out = [genesisEntryOf(model)];
  bodies.forEach((body, i) => {
    const revision = i + 2;
    const fields = body.kind === "update" ? { v: 1, base: revision - 1 } : {};
    out.push({
      revision,
      data: enc({ ...env, seed: i, ...fields, ...body }),
      messageId: `m${revision}`,
    });
  });
  return out;
}

const summary = (r: StepResult) =>
  `${r.kind}:${"error" in r ? `${r.error?.code}:${r.error?.message}` : ""}:${
    r.kind === "applied" ? (r.failures?.length ?? 0) : ""
  }`;

/** The replay of `entries` one by one and in runs of `chunk` (`stepMany`), with draft splices. */
function bothWays(entries: ReturnType<typeof log>, chunk = entries.length) {
  const splice = Array.prototype.splice;
  let draftSplices = 0;
  Array.prototype.splice = function (this: unknown[], ...args: unknown[]) {
    if (isDraft(this)) draftSplices += 1;
    return (splice as (...a: unknown[]) => unknown[]).apply(this, args);
  };
  try {
    const one = new Replay(model, true);
    const oneResults = entries.map((e) => summary(one.step(e)));
    const many = new Replay(model, true);
    const manyResults: string[] = [];
    for (let i = 0; i < entries.length; i += chunk) {
      manyResults.push(...many.stepMany(entries.slice(i, i + chunk)).map(summary));
    }
    return { one, many, oneResults, manyResults, draftSplices };
  } finally {
    Array.prototype.splice = splice;
  }
}

describe("patches that move elements of a state that is itself an array", () => {
  it("splice no draft, one by one or in a catch-up, and give what Immer gives one by one", () => {
    // Inserts and removes near the front, with writes into the elements between.
    const patches: Patch[] = Array.from({ length: 300 }, (_, i): Patch => {
      if (i % 3 === 1) return { op: "replace", path: [i % 5, "id"], value: i };
      if (i % 3 === 2) return { op: "add", path: i % 2 === 0 ? [] : [1], value: { id: -i } };
      return { op: i % 4 === 3 ? "remove" : "add", path: [i % 7], value: { id: -i } };
    });
    const entries = log([
      { kind: "update", patches },
      { kind: "command", v: 3, name: "bump", args: { i: 0 } },
      { kind: "update", patches: patches.slice(0, 30) },
    ]);
    const immer = new Immer({ autoFreeze: true });
    const initial = freeze(model.initial, true) as unknown[];
    let expected = immer.applyPatches(initial, patches);
    expected = immer.produce(expected, (d) => void ((d[0] as { id: number }).id += 1));
    expected = immer.applyPatches(expected, patches.slice(0, 30));

    const { one, many, oneResults, manyResults, draftSplices } = bothWays(entries);
    expect(draftSplices).toBe(0); // before: 440, one per add or remove (through the proxy, each moved every element)
    expect(oneResults).toEqual(["applied::0", "applied::0", "applied::0", "applied::0"]);
    expect(manyResults).toEqual(oneResults);
    expect(one.state).toStrictEqual(expected);
    expect(many.state).toStrictEqual(expected);
    expect((one.state as unknown[]).at(-1)).toBe(initial.at(-1)); // shared, not copied
    expect((many.state as unknown[]).at(-1)).toBe(initial.at(-1));
    expect(Object.isFrozen(many.state)).toBe(true);
  });

  it("a command after such an entry sees what it sees one by one, however chunked (property)", () => {
    const key = fc.oneof(fc.nat(12), fc.constantFrom("-", "x"));
    const body: fc.Arbitrary<Body> = fc.oneof(
      fc.record({
        kind: fc.constant("update" as const),
        patches: fc.array(
          fc.oneof(
            fc.record({ op: fc.constant("add"), path: key.map((k) => [k]), value: fc.nat(9) }),
            fc.record({ op: fc.constant("remove"), path: key.map((k) => [k]) }),
            fc.record({ op: fc.constant("add"), path: fc.constant([]), value: fc.nat(9) }),
            fc.record({ op: fc.constant("add"), path: fc.constant(["-"]), value: fc.nat(9) }),
            fc.record({
              op: fc.constant("replace"),
              path: fc.nat(4).map((i) => [i, "id"]),
              value: fc.nat(9),
            }),
          ) as fc.Arbitrary<Patch>,
          { minLength: 1, maxLength: 6 },
        ),
      }),
      fc.record({
        kind: fc.constant("command" as const),
        v: fc.constantFrom(1 as const, 3 as const),
        name: fc.constantFrom("drop", "count", "define", "bump"),
        args: fc.record({ i: fc.nat(5) }),
      }),
    );
    fc.assert(
      fc.property(
        fc.array(body, { maxLength: 12 }),
        fc.integer({ min: 1, max: 14 }),
        (bodies, chunk) => {
          const { one, many, oneResults, manyResults, draftSplices } = bothWays(log(bodies), chunk);
          expect(manyResults).toEqual(oneResults);
          expect(many.revision).toBe(one.revision);
          expect(many.state).toStrictEqual(one.state); // holes and `undefined` apart
          expect(draftSplices).toBe(0);
        },
      ),
      { numRuns: 200 },
    );
  });
});
