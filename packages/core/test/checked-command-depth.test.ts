import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  MAX_STATE_DEPTH,
  MemoryLog,
  stateHash,
  type StateSyncError,
} from "@statesync/core";
import { olderCommand } from "./deep-models.js";

/**
 * The verdict on a checked command (format 3) is total and the same on every replica: a result
 * nested deeper than a state may be (`MAX_STATE_DEPTH`) fails before the schema sees it (a
 * recursive schema's own recursion overflowed the stack thousands of levels down, which stopped
 * every replica at that entry for good while its caller was told it was stored), and a schema
 * that throws fails the command instead of the replica's reading (docs/guarantees.md,
 * "Unconditional commands are checked where they are applied").
 */
type Tree = { c?: Tree };
const tree: z.ZodType<Tree> = z.lazy(() => z.object({ c: z.optional(tree) }));

function nested(levels: number): Tree {
  const root: Tree = {};
  let at = root;
  for (let i = 1; i < levels; i++) at = at.c = {};
  return root;
}

const depthOf = (t: Tree | undefined): number => {
  let n = 0;
  for (let at = t; at; at = at.c) n += 1;
  return n;
};

function model(state: z.ZodType<{ t: unknown; n: number }>) {
  return defineModel({
    name: "deep",
    state,
    initial: { t: {}, n: 0 },
    commands: {
      /** Puts a tree of `levels` objects at `t` (the state then nests `levels` + 1 deep). */
      grow: {
        args: z.object({ levels: z.number().int() }),
        apply(d, { levels }) {
          d.t = nested(levels);
        },
      },
      bump: {
        args: z.object({}),
        apply(d) {
          d.n += 1;
        },
      },
    },
  });
}

async function open(log: MemoryLog, m: ReturnType<typeof model>, live = true) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log: log.handle(),
    model: m,
    live,
    snapshots: false,
    compaction: false,
    onError: (e) => errors.push(e),
  });
  return Object.assign(sync, { errors });
}

const codes = (errors: StateSyncError[]) => errors.map((e) => e.code);

describe("a checked command's verdict", () => {
  for (const [name, schema] of [
    ["a recursive schema", z.object({ t: tree, n: z.number() })],
    ["a schema that does not look inside", z.object({ t: z.unknown(), n: z.number() })],
  ] as const) {
    it(`refuses a result nested deeper than a state may be, on every replica alike (${name})`, async () => {
      const m = model(schema as never);
      const log = new MemoryLog();
      const writer = await open(log, m);
      const other = await open(log, m);
      // The deepest state allowed: `t` holds MAX_STATE_DEPTH - 1 levels under the root.
      await writer.updateUnconditionally("grow", { levels: MAX_STATE_DEPTH - 1 });
      expect(depthOf(writer.state.t as Tree)).toBe(MAX_STATE_DEPTH - 1);
      for (const levels of [MAX_STATE_DEPTH, 5_000, 50_000]) {
        const refused = await writer.updateUnconditionally("grow", { levels }).catch((e) => e);
        expect(refused).toMatchObject({
          code: "COMMAND_FAILED",
          details: { reason: "invalid-state", committed: true },
        });
        expect((refused as Error).message).toMatch(/deeper than 255 levels/);
      }
      await writer.updateUnconditionally("bump", {});
      await other.waitFor(writer.revision);
      const late = await open(log, m, false); // one catch-up: the batched path, whole checks
      for (const r of [writer, other, late]) {
        expect(r.revision).toBe(writer.revision);
        expect(r.state.n).toBe(1);
        expect(depthOf(r.state.t as Tree)).toBe(MAX_STATE_DEPTH - 1);
        expect(codes(r.errors)).toEqual(["COMMAND_FAILED", "COMMAND_FAILED", "COMMAND_FAILED"]);
      }
      expect(stateHash(late.state)).toBe(stateHash(writer.state));
      await Promise.all([writer.close(), other.close(), late.close()]);
    });
  }

  it("on a state an older SDK's command nested too deep, keeps only a command that makes it shallow", async () => {
    const m = model(z.object({ t: z.unknown(), n: z.number() }) as never);
    const log = new MemoryLog();
    const writer = await open(log, m);
    await writer.waitFor(log.injectRaw(olderCommand("grow", { levels: 300 }))); // unchecked
    expect(depthOf(writer.state.t as Tree)).toBe(300);
    const refused = await writer.updateUnconditionally("bump", {}).catch((e) => e);
    expect(refused).toMatchObject({ code: "COMMAND_FAILED", details: { reason: "invalid-state" } });
    await writer.update("bump", {}); // a conditional update that writes above the limit goes on
    await writer.updateUnconditionally("grow", { levels: 2 });
    await writer.updateUnconditionally("bump", {});
    const late = await open(log, m, false);
    for (const r of [writer, late]) {
      expect(r.state).toEqual({ t: { c: {} }, n: 2 });
      expect(codes(r.errors)).toEqual(["COMMAND_FAILED"]);
    }
    await Promise.all([writer.close(), late.close()]);
  });

  it("fails a command whose result makes the schema throw, and the replicas go on", async () => {
    const m = model(
      z.object({ t: z.unknown(), n: z.number() }).refine((s) => {
        if (s.n === 2) throw new Error("the refinement broke");
        return true;
      }) as never,
    );
    const log = new MemoryLog();
    const writer = await open(log, m);
    await writer.updateUnconditionally("bump", {});
    const refused = await writer.updateUnconditionally("bump", {}).catch((e) => e);
    expect(refused).toMatchObject({ code: "COMMAND_FAILED", details: { reason: "invalid-state" } });
    expect((refused as Error).message).toMatch(/the refinement broke/);
    const late = await open(log, m, false);
    for (const r of [writer, late]) {
      expect(r.state.n).toBe(1);
      expect(r.revision).toBe(writer.revision);
      expect(codes(r.errors)).toEqual(["COMMAND_FAILED"]);
    }
    await Promise.all([writer.close(), late.close()]);
  });
});
