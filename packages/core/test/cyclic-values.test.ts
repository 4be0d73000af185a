import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  canonicalJson,
  createSynchronizer,
  defineModel,
  findNonJson,
  MemoryLog,
  stateHash,
} from "@statesync/core";

/**
 * A value that contains itself (`c.self = c`) in a recipe's result, in a command's arguments or
 * given to `stateHash`: before, the JSON check walked it without end, blocking the event loop
 * until the process ran out of memory (a fresh-eyes trial: exit 134 after ~50 s). Now each is a
 * `VALIDATION` error naming the path, and nothing is appended. One object in two places is JSON
 * (`JSON.stringify` writes it twice) and stays accepted.
 */
const model = defineModel({
  name: "bag",
  state: z.object({ count: z.number(), data: z.record(z.string(), z.unknown()) }),
  initial: { count: 0, data: {} },
  commands: {
    add: {
      args: z.object({ by: z.number(), meta: z.unknown().optional() }),
      apply(draft, { by, meta }) {
        draft.count += by;
        if (meta !== undefined) draft.data.meta = meta;
      },
    },
  },
});

function cyclic(): Record<string, unknown> {
  const c: Record<string, unknown> = { name: "c" };
  c.self = { inner: [c] };
  return c;
}

describe("values that contain themselves", () => {
  it("findNonJson names the cycle; a value shared in two places is fine", () => {
    expect(findNonJson(cyclic())).toMatch(/^\$\.self\.inner\[0\]: a cycle/);
    const shared = { x: 1 };
    expect(findNonJson({ a: shared, b: [shared, shared] })).toBeUndefined();
    const arr: unknown[] = [];
    arr.push(arr);
    expect(findNonJson(arr)).toMatch(/cycle/);
  });

  it("stateHash and canonicalJson throw VALIDATION", () => {
    expect(() => stateHash({ a: cyclic() })).toThrow(
      expect.objectContaining({ code: "VALIDATION" }),
    );
    expect(() => canonicalJson([cyclic()])).toThrow(
      expect.objectContaining({ code: "VALIDATION" }),
    );
  });

  it("a recipe that stores one, and a command whose args hold one, reject VALIDATION; nothing is appended", async () => {
    const log = new MemoryLog();
    const sync = await createSynchronizer({ log, model });
    try {
      const before = sync.revision;
      const c = cyclic();
      await expect(
        sync.update((d) => {
          d.data.c = c;
        }),
      ).rejects.toMatchObject({ code: "VALIDATION" });
      await expect(sync.update("add", { by: 1, meta: c })).rejects.toMatchObject({
        code: "VALIDATION",
      });
      await expect(sync.updateUnconditionally("add", { by: 1, meta: c })).rejects.toMatchObject({
        code: "VALIDATION",
      });
      expect(sync.revision).toBe(before);
      const shared = { x: 1 };
      await sync.update((d) => {
        d.data.a = shared;
        d.data.b = shared;
      });
      expect(sync.state.data).toEqual({ a: { x: 1 }, b: { x: 1 } });
    } finally {
      await sync.close();
    }
  });
});
