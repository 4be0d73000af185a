import { describe, expect, it } from "vitest";
import { createSynchronizer, MemoryLog } from "@statesync/core";
import { counterModel } from "./fixtures.js";

/**
 * A conditional update made while this replica's own unconditional commands are in flight is
 * appended once they are applied here: appended before them, its base is already stale when it
 * arrives. Before, a lone writer doing `updateUnconditionally` (not awaited) then `update` took
 * 2 attempts every time, with no other writer (a new user's trial: 20 of 20, 20 conflicts).
 */
describe("a conditional update behind the replica's own commands in flight", () => {
  it("commits at its first attempt, after them, with no conflict", async () => {
    const sync = await createSynchronizer({ log: new MemoryLog(), model: counterModel });
    const attempts: number[] = [];
    const commands: Array<Promise<{ revision: number }>> = [];
    for (let i = 0; i < 20; i++) {
      commands.push(sync.updateUnconditionally("increment", { by: 1 }));
      const r = await sync.update((d) => {
        d.log.push(`after ${d.count}`);
      });
      attempts.push(r.attempts);
    }
    await Promise.all(commands);
    expect(attempts).toEqual(Array(20).fill(1));
    expect(sync.stats.conflicts).toBe(0);
    // Each update saw the command sent before it.
    expect(sync.state.log).toEqual(Array.from({ length: 20 }, (_, i) => `after ${i + 1}`));
    await sync.close();
  });

  it("still commits when a command in flight fails", async () => {
    const log = new MemoryLog();
    const sync = await createSynchronizer({ log, model: counterModel });
    const refused = sync.updateUnconditionally("increment", { by: 0.5 } as never); // VALIDATION
    const r = await sync.update((d) => void (d.count += 10));
    await expect(refused).rejects.toMatchObject({ code: "VALIDATION" });
    expect(r.attempts).toBe(1);
    expect(sync.state.count).toBe(10);
    await sync.close();
  });
});
