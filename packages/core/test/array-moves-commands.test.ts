import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { Replay } from "../src/replay.js";
import { genesisEntryOf } from "./engine-fixtures.js";

/**
 * A patch entry that moves elements makes the array plain inside the shared draft of a batch
 * (`applyCheckedPatches`). A command later in that draft must still see the array as Immer's
 * draft it gets one by one: a plain array and a draft differ for `delete` (a hole, where the
 * draft writes `undefined`) and `Object.defineProperty` (refused by a draft), so a replica
 * catching up in one draft ended elsewhere than one applying each entry alone.
 */
const model = defineModel({
  name: "moves-commands",
  state: z.object({
    list: z.array(z.unknown()),
    n: z.number(),
  }),
  initial: { list: [], n: 0 },
  commands: {
    drop: {
      args: z.object({ i: z.number().int() }),
      apply(d, { i }) {
        delete d.list[i];
      },
    },
    count: {
      args: z.object({}),
      apply(d) {
        d.n = d.list.filter(() => true).length; // skips holes, not `undefined`
      },
    },
    define: {
      args: z.object({ i: z.number().int() }),
      apply(d, { i }) {
        const desc = { value: 7, writable: true, enumerable: true, configurable: true };
        Object.defineProperty(d.list, i, desc);
      },
    },
  },
});

const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));
const env = { ts: 1_700_000_000_000, client: "c" };

function log(bodies: Array<(revision: number) => object>) {
  const out = [genesisEntryOf(model)];
  bodies.forEach((body, i) => {
    const revision = i + 2;
    out.push({
      revision,
      data: enc({ ...env, seed: i, ...body(revision) }),
      messageId: `m${revision}`,
    });
  });
  return out;
}

const insert = (value: number) => (revision: number) => ({
  v: 1,
  kind: "update",
  base: revision - 1,
  patches: [{ op: "add", path: ["list", 0], value }],
});
const command = (v: 1 | 3, name: string, args: object) => () => ({
  v,
  kind: "command",
  name,
  args,
});

function bothWays(entries: ReturnType<typeof log>) {
  const one = new Replay(model, true);
  const oneResults = entries.map((e) => one.step(e).kind);
  const many = new Replay(model, true);
  const manyResults = many.stepMany(entries).map((r) => r.kind);
  return { one, many, oneResults, manyResults };
}

describe("commands after a patch entry that moved elements, in one draft", () => {
  it("delete leaves what a draft leaves (undefined, not a hole)", () => {
    const entries = log([
      insert(1),
      insert(2),
      insert(3),
      command(1, "drop", { i: 1 }),
      command(1, "count", {}),
    ]);
    const { one, many } = bothWays(entries);
    const s1 = one.state as { list: unknown[]; n: number };
    const s2 = many.state as { list: unknown[]; n: number };
    expect(s1.n).toBe(3);
    expect(s2.n).toBe(s1.n);
    expect(1 in s2.list).toBe(1 in s1.list);
  });

  it("Object.defineProperty is refused as a draft refuses it", () => {
    const entries = log([insert(1), insert(2), insert(3), command(3, "define", { i: 0 })]);
    const { one, many, oneResults, manyResults } = bothWays(entries);
    expect(manyResults).toEqual(oneResults);
    expect(many.state).toEqual(one.state);
  });
});
