import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  stateHash,
  type StateSyncError,
} from "@statesync/core";

/**
 * Regression test (stop 21): a command whose arguments pass its schema but name a huge array
 * index (`set({ i: 1e8 })` writing `d.list[i]`, or `length = n`, or `d.list = new Array(n)`) was
 * refused only after Immer had finalized the draft, and Immer's walk and patches of the grown
 * array cost it the index: 29 s for 1e6, and every replica's process out of memory for 1e8 (the
 * writer's too, for the same command sent conditionally). One such entry in a log stopped every
 * replica following it and every replica opened later. Such a write is now refused before Immer
 * finalizes the draft, at a cost of what the recipe wrote: unconditionally a `COMMAND_FAILED`
 * no-op on every replica, conditionally a `VALIDATION` rejection with nothing appended.
 * (Timing is not asserted: before the fix these runs did not end.)
 */
const BIG = 1_000_000_000;
const model = defineModel({
  name: "huge-index",
  state: z.object({ list: z.array(z.number()) }),
  initial: { list: [] },
  commands: {
    set: {
      args: z.object({ i: z.number().int().nonnegative(), v: z.number() }),
      apply(d, { i, v }) {
        d.list[i] = v;
      },
    },
    length: {
      args: z.object({ n: z.number().int().nonnegative() }),
      apply(d, { n }) {
        d.list.length = n;
      },
    },
    replace: {
      args: z.object({ n: z.number().int().nonnegative() }),
      apply(d, { n }) {
        d.list = new Array<number>(n);
      },
    },
    // Legitimate: an array made by length and filled before the recipe ends, a length grown and
    // shrunk back, and the standard methods that move elements up past the end on the way.
    fill: {
      args: z.object({ n: z.number().int().min(0).max(100) }),
      apply(d, { n }) {
        d.list = new Array<number>(n);
        for (let i = 0; i < n; i++) d.list[i] = i;
      },
    },
    back: {
      args: z.object({}),
      apply(d) {
        d.list.length = BIG;
        d.list.length = 1;
      },
    },
    shift: {
      args: z.object({}),
      apply(d) {
        d.list.unshift(-2, -1);
        d.list.splice(1, 0, 10, 11, 12);
      },
    },
  },
});

const open = (log: MemoryLog) => createSynchronizer({ log, model, snapshots: false });

describe("a write to an array at a huge index or length", () => {
  const hostile: Array<[string, object]> = [
    ["set", { i: BIG, v: 1 }],
    ["length", { n: BIG }],
    ["replace", { n: BIG }],
  ];

  for (const [name, args] of hostile) {
    it(`is a COMMAND_FAILED no-op on every replica, unconditionally (${name})`, async () => {
      const log = new MemoryLog();
      const writer = await open(log);
      const errors: StateSyncError[] = [];
      writer.on("error", (e) => errors.push(e));
      await writer.update("set", { i: 0, v: 7 });
      const failed = await writer.updateUnconditionally(name as "set", args as never).then(
        () => undefined,
        (e: StateSyncError) => e,
      );
      expect(failed?.code).toBe("COMMAND_FAILED");
      expect(failed?.message).toMatch(/holes/);
      await writer.update("set", { i: 1, v: 8 });
      const late = await open(log);
      const { latestRevision } = await log.info();
      for (const r of [writer, late]) {
        expect(r.state.list).toEqual([7, 8]);
        expect(r.revision).toBe(latestRevision);
      }
      expect(stateHash(late.state)).toBe(stateHash(writer.state));
      await Promise.all([writer.close(), late.close()]);
    });

    it(`is refused with VALIDATION and nothing appended, conditionally (${name})`, async () => {
      const log = new MemoryLog();
      const writer = await open(log);
      await writer.update("set", { i: 0, v: 7 });
      const before = (await log.info()).latestRevision;
      expect(before).toBeGreaterThan(0);
      const failed = await writer.update(name as "set", args as never).then(
        () => undefined,
        (e: StateSyncError) => e,
      );
      expect(failed?.code).toBe("VALIDATION");
      expect((await log.info()).latestRevision).toBe(before);
      expect(writer.state.list).toEqual([7]);
      await writer.close();
    });
  }

  it("a command entry of the first format (any writer can append one) is a no-op too", async () => {
    const log = new MemoryLog();
    const live = await open(log);
    const errors: StateSyncError[] = [];
    live.on("error", (e) => errors.push(e));
    await live.update("set", { i: 0, v: 7 });
    const revision = log.injectRaw(
      `{"v":1,"kind":"command","ts":1,"seed":1,"client":"x","name":"set","args":{"i":${BIG},"v":1}}`,
    );
    await live.update("set", { i: 1, v: 8 });
    const late = await open(log);
    for (const r of [live, late]) expect(r.state.list).toEqual([7, 8]);
    expect(errors.map((e) => [e.code, e.details.revision])).toContainEqual([
      "COMMAND_FAILED",
      revision,
    ]);
    await Promise.all([live.close(), late.close()]);
  });

  it("a plain recipe writing a huge index is refused with VALIDATION", async () => {
    const log = new MemoryLog();
    const writer = await open(log);
    const failed = await writer
      .update((d) => {
        d.list[BIG] = 1;
      })
      .then(
        () => undefined,
        (e: StateSyncError) => e,
      );
    expect(failed?.code).toBe("VALIDATION");
    expect(writer.state.list).toEqual([]);
    await writer.close();
  });

  it("arrays that are whole when the recipe ends still apply, on every replica", async () => {
    const log = new MemoryLog();
    const writer = await open(log);
    await writer.update("fill", { n: 3 });
    await writer.update("back", {});
    await writer.updateUnconditionally("fill", { n: 4 });
    await writer.updateUnconditionally("back", {});
    await writer.updateUnconditionally("shift", {});
    await writer.update("shift", {});
    const late = await open(log);
    const expected = [-2, 10, 11, 12, -1, -2, 10, 11, 12, -1, 0];
    for (const r of [writer, late]) expect(r.state.list).toEqual(expected);
    await Promise.all([writer.close(), late.close()]);
  });
});
