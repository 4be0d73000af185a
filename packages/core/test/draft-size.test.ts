import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { draftRun, RUN_MAX, RUN_MIN } from "../src/apply.js";
import { Replay } from "../src/replay.js";
import { genesisEntryOf } from "./engine-fixtures.js";

/**
 * How many entries a catch-up hands over together (`Replay.preferredRun`, read by the reader):
 * short drafts when every entry costs alike (a long draft only keeps more alive: on a
 * text-editing trace drafts of 256 cost about 20% more CPU than drafts of 32), long ones when
 * the draft's first entry copies a large container that the rest then write into cheaply.
 * The size comes from measured times, so the tests give `draftRun` the times, and check of a
 * real replay only what holds on a loaded machine too (before, a replay's suggestion was
 * asserted, and CI's load made the copy look cheaper: 151 entries instead of 256).
 */
const model = defineModel({
  name: "draft-size",
  state: z.object({ items: z.record(z.string(), z.number()) }),
  initial: { items: {} },
  commands: {
    put: {
      args: z.object({ from: z.number().int(), count: z.number().int() }),
      apply(d, { from, count }) {
        for (let i = from; i < from + count; i++) d.items[`k${i}`] = i;
      },
    },
  },
});

const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const env = { v: 1, ts: 1_700_000_000_000, client: "c" };

/** A replay of `model` at revision 1 (its genesis entry) and a maker of its next entries. */
function replay() {
  const r = new Replay(model, true);
  r.stepMany([genesisEntryOf(model)]);
  let revision = 1;
  const next = (name: string, args: unknown) => {
    revision += 1;
    const data = enc({ ...env, kind: "command", seed: revision, name, args });
    return { revision, data, messageId: `m${revision}` };
  };
  return { r, next };
}

describe("the entries a catch-up hands over together", () => {
  it("are few when every entry costs alike", () => {
    expect(draftRun(3, 3)).toBe(RUN_MIN); // the first entry costs what the others do
    expect(draftRun(0, 3)).toBe(RUN_MIN);
  });

  it("are many when the first entry of a draft copies a large record", () => {
    expect(draftRun(20, 0.05)).toBe(RUN_MAX); // a copy that costs 400 entries
    expect(draftRun(5, 0)).toBe(RUN_MAX); // entries too cheap to measure
    expect(draftRun(1, 0.05)).toBe(160); // the draft's own cost an eighth of 160 entries'
  });

  it("is suggested by a replay once a draft held 8 entries, within the bounds", () => {
    const { r, next } = replay();
    r.stepMany([next("put", { from: 0, count: 50_000 })]); // a record of 50,000 entities
    r.stepMany(Array.from({ length: 64 }, (_, i) => next("put", { from: i, count: 1 })));
    expect(Object.keys(r.state.items)).toHaveLength(50_000);
    expect(r.preferredRun).toBeGreaterThanOrEqual(RUN_MIN);
    expect(r.preferredRun).toBeLessThanOrEqual(RUN_MAX);
  });
});
