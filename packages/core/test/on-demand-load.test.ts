import { describe, expect, it, vi } from "vitest";
import { MemoryLog } from "@statesync/core";
import { open } from "./fixtures.js";

// The code a page loads on demand (README, "Bundle size") may fail to load: a page that lost its
// network between opening and needing it. Each load is tried again at the next need.
const loads = vi.hoisted(() => ({ fail: 0, history: 0 }));

vi.mock(import("../dist/engine/compaction-run.js"), async (importOriginal) => {
  if (loads.fail > 0) {
    loads.fail -= 1;
    throw new TypeError("Failed to fetch dynamically imported module");
  }
  return importOriginal();
});

vi.mock(import("../dist/history-read.js"), async (importOriginal) => {
  if (loads.history > 0) {
    loads.history -= 1;
    throw new TypeError("Failed to fetch dynamically imported module");
  }
  return importOriginal();
});

describe("code loaded on demand", () => {
  it("history() and stateAt() whose code cannot be loaded fail UNAVAILABLE, then load it", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    loads.history = 2;
    const unavailable = {
      code: "UNAVAILABLE",
      message: expect.stringContaining("the history code could not be loaded"),
    };
    await expect(a.history()).rejects.toMatchObject(unavailable);
    await expect(a.stateAt(2)).rejects.toMatchObject(unavailable);
    expect((await a.history()).map((e) => e.revision)).toEqual([1, 2, 3, 4]);
    expect((await a.stateAt(2)).count).toBe(1);
    await a.close();
  });

  it("a compaction whose code cannot be loaded fails UNAVAILABLE, and the next one loads it", async () => {
    const log = new MemoryLog();
    const a = await open(log, { compaction: false });
    for (let i = 0; i < 5; i++) await a.update("increment", { by: 1 });
    loads.fail = 1;
    await expect(a.compact()).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringContaining("the compaction code could not be loaded"),
    });
    const { revision } = await a.compact();
    expect(revision).toBe(7);
    expect((await log.info()).firstRevision).toBe(7);
    await a.close();
  });
});
