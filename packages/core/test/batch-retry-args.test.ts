import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { defineModel } from "../src/model.js";
import { Replay, type StepResult } from "../src/replay.js";
import { genesisEntryOf } from "./engine-fixtures.js";

/**
 * A catch-up's draft (`stepMany`) or a `commands` entry's that fails at a command runs the
 * commands before it again, in a new draft. Those ran once already, on the same arguments: a
 * command that changes its own arguments (`ids.reverse()`, a strict command catching nothing)
 * ran the second time on what the first left, and a catch-up reached another state than a
 * replica applying entry by entry (a review's finding, stop 45). Each run gets its arguments as
 * the entry holds them.
 */
const model = defineModel({
  name: "batch-retry-args",
  state: z.object({ firsts: z.array(z.number()) }),
  initial: { firsts: [] },
  commands: {
    newestFirst: {
      args: z.object({ ids: z.array(z.number()) }),
      apply(d, { ids }) {
        d.firsts.push(ids.reverse()[0]!);
      },
    },
    // Its own, untyped: the schema hands the entry's value over as it is.
    newestFirstAny: {
      args: z.any(),
      apply(d, args: { ids: number[] }) {
        d.firsts.push(args.ids.reverse()[0]!);
      },
    },
    boom: {
      args: z.object({}),
      apply() {
        throw new Error("boom");
      },
    },
  },
});

type Call = { name: keyof typeof model.commands; args: object };
const rev: Call = { name: "newestFirst", args: { ids: [1, 2, 3] } };
const revAny: Call = { name: "newestFirstAny", args: { ids: [4, 5, 6] } };
const boom: Call = { name: "boom", args: {} };

const bytes = (o: object) => new TextEncoder().encode(JSON.stringify(o));
const body = { v: 3, kind: "command", ts: 1, client: "c" };

/** The state and results of `calls` one entry at a time and caught up in one run. */
function bothWays(calls: readonly Call[]) {
  const entries = [genesisEntryOf(model)];
  calls.forEach((c, k) => {
    const data = bytes({ ...body, seed: k, ...c });
    entries.push({ revision: k + 2, data, messageId: `m${k}` });
  });
  const said = (r: StepResult) => `${r.kind} ${"error" in r ? r.error?.message : ""}`;
  const one = new Replay(model, true);
  const oneResults = entries.map((e) => said(one.step(e)));
  const many = new Replay(model, true);
  const manyResults = many.stepMany(entries).map(said);
  return [
    { state: one.state, results: oneResults },
    { state: many.state, results: manyResults },
  ];
}

describe("commands run again after their draft failed", () => {
  it("get their arguments as the entries hold them in a catch-up", () => {
    for (const calls of [
      [rev, boom],
      [rev, revAny, boom],
      [revAny, rev, rev, boom, rev],
    ]) {
      const [alone, shared] = bothWays(calls);
      expect(shared).toEqual(alone);
    }
    expect(bothWays([rev, boom])[1]!.state).toEqual({ firsts: [3] });
  });

  it("get their arguments as the entry holds them in a commands entry", () => {
    const commands = [rev, rev, boom].map((c, k) => ({ seed: k, ...c }));
    const entry = { ...body, v: 4, kind: "commands", commands };
    const replay = new Replay(model, true);
    replay.step(genesisEntryOf(model));
    const result = replay.step({ revision: 2, data: bytes(entry), messageId: "all" });
    expect(result.kind).toBe("applied");
    expect(replay.state).toEqual({ firsts: [3, 3] });
  });
});
