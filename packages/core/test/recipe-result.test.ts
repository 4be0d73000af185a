import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { createSynchronizer, defineModel, MemoryLog } from "@statesync/core";

const item = z.object({ id: z.string(), tags: z.array(z.string()) });
const model = defineModel({
  name: "recipe-result",
  state: z.object({ items: z.array(item), counter: z.number() }),
  initial: { items: [{ id: "a", tags: ["x"] }], counter: 0 },
  commands: {},
});

/**
 * What `update()` resolves with as `result` when a recipe returns drafts inside an object or
 * array it built. Immer revokes its drafts when the update's draft is finished, so before,
 * `JSON.stringify(result)` threw `Cannot perform 'get' on a proxy that has been revoked` (a new
 * user's trial): only a draft returned as it is was copied.
 */
describe("an update's result holding drafts", () => {
  it("holds plain copies of them, as they were when the recipe returned", async () => {
    const sync = await createSynchronizer({ log: new MemoryLog(), model });
    const { result } = await sync.update((d) => {
      d.items[0]!.tags.push("y");
      return { first: d.items[0], all: [d.items, { tags: d.items[0]!.tags }], n: 1 };
    });
    expect(JSON.parse(JSON.stringify(result))).toEqual({
      first: { id: "a", tags: ["x", "y"] },
      all: [[{ id: "a", tags: ["x", "y"] }], { tags: ["x", "y"] }],
      n: 1,
    });
    await sync.close();
  });

  it("in a batch of queued updates too, each its own", async () => {
    const sync = await createSynchronizer({ log: new MemoryLog(), model });
    const [a, b] = await Promise.all([
      sync.update((d) => {
        d.counter += 1;
        return [d.items[0]];
      }),
      sync.update((d) => {
        d.items.push({ id: "b", tags: [] });
        return { last: d.items[d.items.length - 1], counter: d.counter };
      }),
    ]);
    expect(JSON.stringify(a.result)).toBe('[{"id":"a","tags":["x"]}]');
    expect(JSON.stringify(b.result)).toBe('{"last":{"id":"b","tags":[]},"counter":1}');
    await sync.close();
  });

  it("leaves a result without drafts as it is: the same object", async () => {
    const sync = await createSynchronizer({ log: new MemoryLog(), model });
    const mine = { deep: { list: [1, 2] }, at: new Date(0) };
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    expect((await sync.update(() => mine)).result).toBe(mine);
    expect((await sync.update(() => cyclic)).result).toBe(cyclic);
    await sync.close();
  });

  // Its drafts are copied once the recipe's holes are refused: a copy of an array whose length
  // was set to 1e8 walks every index (26 s), where the refusal is at once (`refuseHoles`).
  it("in a batch: a recipe leaving holes is refused before what it returned is copied", async () => {
    const sync = await createSynchronizer({ log: new MemoryLog(), model });
    const started = Date.now();
    // The first goes alone; the two queued behind it share a batch.
    const [, a, b] = await Promise.allSettled([
      sync.update((d) => void (d.counter += 1)),
      sync.update((d) => void (d.counter += 1)),
      sync.update((d) => {
        d.items.length = 1e8;
        return { all: d.items };
      }),
    ]);
    expect(a.status).toBe("fulfilled");
    expect(b.status === "rejected" && (b.reason as { code: string }).code).toBe("VALIDATION");
    expect(Date.now() - started).toBeLessThan(5_000);
    await sync.close();
  }, 60_000);
});
