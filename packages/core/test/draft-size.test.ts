import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { RUN_MAX, RUN_MIN } from "../src/apply.js";
import { Replay } from "../src/replay.js";

/**
 * How many entries a catch-up hands over together (`Replay.preferredRun`, read by the reader):
 * short drafts when every entry costs alike (a long draft only keeps more alive: on a
 * text-editing trace drafts of 256 cost about 20% more CPU than drafts of 32), long ones when
 * the draft's first entry copies a large container that the rest then write into cheaply.
 */
const model = defineModel({
  name: "draft-size",
  state: z.object({ items: z.record(z.string(), z.number()), n: z.number() }),
  initial: { items: {}, n: 0 },
  commands: {
    put: {
      args: z.object({ from: z.number().int(), count: z.number().int() }),
      apply(d, { from, count }) {
        for (let i = from; i < from + count; i++) d.items[`k${i}`] = i;
      },
    },
    spin: {
      args: z.object({ us: z.number().int() }),
      apply(d, { us }) {
        const end = performance.now() + us / 1000;
        while (performance.now() < end);
        d.n += 1;
      },
    },
  },
});

const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const env = { v: 1, ts: 1_700_000_000_000, client: "c" };

/** A replay of `model` at revision 1 (its genesis entry) and a maker of its next entries. */
function replay() {
  const r = new Replay(model, true);
  const genesis = {
    ...env,
    kind: "genesis",
    model: model.name,
    version: model.version,
    initialHash: model.initialHash,
  };
  r.stepMany([{ revision: 1, data: enc(genesis), messageId: "g" }]);
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
    const { r, next } = replay();
    r.stepMany(Array.from({ length: 64 }, () => next("spin", { us: 3_000 })));
    expect(r.state.n).toBe(64);
    expect(r.preferredRun).toBe(RUN_MIN);
  });

  it("are many when the first entry of a draft copies a large record", () => {
    const { r, next } = replay();
    r.stepMany([next("put", { from: 0, count: 50_000 })]); // a record of 50,000 entities
    r.stepMany(Array.from({ length: 64 }, (_, i) => next("put", { from: i, count: 1 })));
    expect(Object.keys(r.state.items)).toHaveLength(50_000);
    expect(r.preferredRun).toBe(RUN_MAX);
  });
});
