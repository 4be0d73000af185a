import { describe, expect, it } from "vitest";
import { createSynchronizer, MemoryLog, type StateSyncError } from "@statesync/core";
import { riskyModel as model } from "./fixtures.js";

/**
 * An unconditional command whose recipe throws for some arguments fails that call alone, with
 * `COMMAND_FAILED`, however many calls are in flight. The replica used to remember only the last
 * 1,024 failed entries by revision: with 5,000 failing calls in flight, it had read most of them
 * back (and forgotten their failures) before their acknowledgements came, and 3,976 calls resolved
 * `{ revision }` as if applied, though every replica skipped them (a new user's trial).
 */

describe("unconditional commands failing with many in flight", () => {
  // With a signal each call goes alone (commands without one share entries: at most 512
  // travel then, fewer than the ring holds; the kind is the same).
  it.each([
    ["each alone (a signal each)", () => ({ signal: new AbortController().signal })],
    ["sent together", () => undefined],
  ])(
    "every failing call rejects COMMAND_FAILED and every other resolves: %s",
    async (_, options) => {
      const sync = await createSynchronizer({ log: new MemoryLog(), model, snapshots: false });
      sync.on("error", () => {});
      try {
        const n = 5_000;
        const calls = Array.from({ length: n }, (_, i) =>
          sync.updateUnconditionally("bump", { n: i + 1 }, options()),
        );
        const settled = await Promise.allSettled(calls);
        const wrong = settled.flatMap((s, i) => {
          const fails = (i + 1) % 2 === 0;
          if (fails && s.status === "rejected") {
            const e = s.reason as StateSyncError;
            return e.code === "COMMAND_FAILED" && e.details.reason === "threw" ? [] : [i + 1];
          }
          return fails === (s.status === "rejected") ? [] : [i + 1];
        });
        expect(wrong.length, `calls settled wrongly, first: ${wrong.slice(0, 5).join(", ")}`).toBe(
          0,
        );
        expect(sync.state.count).toBe(n / 2);
      } finally {
        await sync.close();
      }
    },
  );
});
