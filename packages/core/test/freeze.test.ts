import { describe, expect, it } from "vitest";
import { MemoryLog } from "@statesync/core";
import { open } from "./fixtures.js";
import { deepFreeze } from "../src/freeze.js";

describe("deep freezing of applied states (freeze.ts)", () => {
  it("every container of a replica's state is frozen, new ones included", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    const b = await open(log.handle(), { compaction: false });
    for (let i = 0; i < 5; i++) await a.updateUnconditionally("push", { item: `x${i}` });
    await a.update((d) => void d.items.push("y"));
    await b.waitFor(a.revision);
    for (const s of [a.state, b.state]) {
      expect(Object.isFrozen(s)).toBe(true);
      expect(Object.isFrozen(s.items)).toBe(true);
      expect(Object.isFrozen(s.log)).toBe(true);
    }
    expect(b.state.items).toHaveLength(6);
    await Promise.all([a.close(), b.close()]);
  });

  it("freezes what is reachable, iteratively, and skips what it froze before", () => {
    let deep: unknown = { leaf: [1, { x: 2 }] };
    for (let i = 0; i < 100_000; i++) deep = { next: deep };
    expect(() => deepFreeze(deep)).not.toThrow(); // no recursion to overflow
    let node = deep as { next?: unknown; leaf?: [number, { x: number }] };
    while (node.next) {
      expect(Object.isFrozen(node)).toBe(true);
      node = node.next as typeof node;
    }
    expect(Object.isFrozen(node.leaf![1])).toBe(true);
    const shared = deepFreeze({ a: 1 });
    const parent = deepFreeze({ shared, fresh: { b: 2 } });
    expect(Object.isFrozen(parent.fresh)).toBe(true);
    expect(parent.shared).toBe(shared);
  });
});
