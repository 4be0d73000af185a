import { MemoryLog, type RevisionedLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { open } from "./fixtures.js";

/** `log` whose conditional appends answer only after the follower had time to deliver. */
function lateAcks(log: MemoryLog): RevisionedLog {
  return new Proxy(log, {
    get(target, key) {
      if (key === "appendConditional") {
        return async (...args: Parameters<MemoryLog["appendConditional"]>) => {
          const result = await target.appendConditional(...args);
          await new Promise((r) => setTimeout(r, 20));
          return result;
        };
      }
      const value = Reflect.get(target, key) as unknown;
      return typeof value === "function"
        ? (value as (...a: unknown[]) => unknown).bind(target)
        : value;
    },
  });
}

describe("a writer reading its own update back before the acknowledgement (issue 8)", () => {
  it("adopts the state its recipes produced instead of replaying the patches", async () => {
    const log = new MemoryLog();
    const writer = await open(lateAcks(log), { clientId: "w", compaction: false });
    const reader = await open(log.handle(), { clientId: "r", compaction: false });
    for (let i = 1; i <= 5; i++) {
      const before = writer.revision;
      const result = await writer.update((d) => {
        d.count += 1;
      });
      // The follower delivered the entry during the 20 ms the acknowledgement took.
      expect(result.revision).toBe(before + 1);
      // Adopted: the replica holds the very object the recipes produced (a replay makes another).
      expect(writer.state).toBe(result.state);
      expect(writer.state.count).toBe(i);
      await reader.waitFor(result.revision);
      expect(reader.state).toEqual(writer.state);
      expect(Object.isFrozen(writer.state)).toBe(true);
    }
    expect(writer.stats.entriesApplied).toBe(5);
    await Promise.all([writer.close(), reader.close()]);
  });

  it("replays its own entry when the replica moved past the entry's base meanwhile", async () => {
    const log = new MemoryLog();
    const writer = await open(lateAcks(log), { clientId: "w", compaction: false });
    const other = await open(log.handle(), { clientId: "o", compaction: false });
    const results = await Promise.all([
      writer.update((d) => {
        d.count += 1;
      }),
      other.updateUnconditionally("increment", { by: 10 }),
      other.updateUnconditionally("increment", { by: 100 }),
    ]);
    const last = Math.max(...results.map((r) => r.revision));
    await writer.waitFor(last);
    await other.waitFor(last);
    expect(writer.state).toEqual(other.state);
    expect(writer.state.count).toBe(111);
    expect(await writer.stateAt(results[0].revision)).toEqual(results[0].state);
    await Promise.all([writer.close(), other.close()]);
  });
});
