import { changesOnly, MemoryLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { injectCommand, openCounting } from "./fixtures.js";

/** `changesOnly` (core pending/optimistic.ts): a subscriber that needs no view computes none. */
describe("changesOnly optimistic subscribers", () => {
  async function counting() {
    const log = new MemoryLog();
    const { sync, counter } = await openCounting(log);
    return { log, sync, runs: () => counter.runs };
  }

  it("are told of each change with no state, and the view is not re-run for them", async () => {
    const { log, sync, runs } = await counting();
    const heard: unknown[] = [];
    sync.subscribe(
      changesOnly((state: unknown) => heard.push(state)),
      { optimistic: true },
    );
    log.setAppendDelay(1_000); // the bumps stay pending while other writers' entries arrive
    const pending = Array.from({ length: 5 }, () => sync.update("bump", {}));
    await new Promise((r) => setTimeout(r, 0));
    const before = runs();
    heard.length = 0;
    for (let i = 0; i < 3; i++) {
      const revision = injectCommand(log, "add", { card: `o${i}` });
      await sync.waitFor(revision);
      await new Promise((r) => setTimeout(r, 0));
    }
    expect(sync.state.cards).toEqual(["o0", "o1", "o2"]);
    expect(sync.pendingCount).toBe(5);
    expect(heard.length).toBeGreaterThan(0);
    expect(heard.every((s) => s === undefined)).toBe(true);
    // Nobody read the view while other writers' entries came in: no pending update re-ran.
    expect(runs()).toBe(before);
    // Read, it is the right one.
    expect(sync.optimisticState.n).toBe(5);
    expect(sync.optimisticState.cards).toEqual(["o0", "o1", "o2"]);
    log.setAppendDelay(0);
    await Promise.all(pending);
    await sync.close();
  });

  it("a plain optimistic subscriber beside one still gets the view", async () => {
    const { log, sync } = await counting();
    const plain: number[] = [];
    sync.subscribe(
      changesOnly(() => undefined),
      { optimistic: true },
    );
    sync.subscribe((state) => plain.push(state.n), { optimistic: true });
    log.setOffline(true);
    const done = sync.update("bump", {});
    await new Promise((r) => setTimeout(r, 0));
    expect(plain.at(-1)).toBe(1);
    log.setOffline(false);
    await done;
    await sync.close();
  });
});
