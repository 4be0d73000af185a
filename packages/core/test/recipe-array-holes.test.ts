import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  isStateSyncError,
  MemoryLog,
  stateHash,
} from "@statesync/core";

/**
 * Arrays with holes left by a conditional update (found beside the checked commands' fix, stop
 * 20): Immer's patches leave out the holes a length write leaves, so the writer kept
 * `[<2 empty items>, {a: 3}]` while every other replica applied the patches to
 * `[{a: 1}, {a: 2}, {a: 3}]`: one revision, two states. A hole is not JSON: the writer refuses the
 * update (`VALIDATION`, nothing appended), whatever it recorded.
 */
const model = defineModel({
  name: "recipe-holes",
  state: z.object({
    objs: z.array(z.object({ a: z.number() })),
    any: z.array(z.unknown()),
  }),
  initial: { objs: [{ a: 1 }, { a: 2 }], any: [1, 2] },
  commands: {},
});
type S = (typeof model)["initial"];

const recipes: Record<string, (d: S) => void> = {
  refill: (d) => {
    d.objs.length = 0;
    d.objs[2] = { a: 3 };
  },
  regrow: (d) => {
    d.any.length = 0;
    d.any.length = 2;
  },
  past: (d) => {
    d.any[4] = 1;
  },
  grow: (d) => {
    d.any.length = 5;
  },
  del: (d) => {
    delete d.any[0];
  },
};

describe("a conditional update that leaves holes in an array", () => {
  for (const [name, recipe] of Object.entries(recipes)) {
    it(`is refused by its writer: ${name}`, async () => {
      const log = new MemoryLog();
      const writer = await createSynchronizer({ log, model });
      const before = writer.revision;
      const refused = await writer.update(recipe as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isStateSyncError(refused, "VALIDATION"), String(refused)).toBe(true);
      expect(writer.revision).toBe(before);
      // Whatever happened, a fresh replica holds the writer's state.
      await writer.update((d) => void d.objs.push({ a: 9 }));
      const fresh = await createSynchronizer({ log: log.handle(), model });
      expect(fresh.revision).toBe(writer.revision);
      expect(stateHash(fresh.state)).toBe(stateHash(writer.state));
      await Promise.all([writer.close(), fresh.close()]);
    });
  }

  it("is refused on a large state too (its runs record their writes: GUIDE_AT)", async () => {
    const log = new MemoryLog();
    const writer = await createSynchronizer({ log, model });
    // A change that copies a container of more than 1,024 members makes the next runs guided.
    await writer.update((d) => {
      for (let i = 0; i < 2_000; i++) d.any.push(i);
    });
    await writer.update((d) => void d.any.push(0));
    for (const recipe of [recipes.refill!, recipes.regrow!]) {
      const refused = await writer.update(recipe as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isStateSyncError(refused, "VALIDATION"), String(refused)).toBe(true);
    }
    await writer.update((d) => void d.objs.push({ a: 9 }));
    const fresh = await createSynchronizer({ log: log.handle(), model });
    expect(stateHash(fresh.state)).toBe(stateHash(writer.state));
    await Promise.all([writer.close(), fresh.close()]);
  });
});
