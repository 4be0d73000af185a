import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createSynchronizer, defineModel, MemoryLog, type StateSyncError } from "@statesync/core";

/**
 * A refused update or command costs what the check along its writes costs, not a parse of the
 * whole state (a trial: a command refused by `n: z.number().max(...)` on a state of 28,000
 * numbers parsed the whole state twice on every replica, about 11 ms each; a catch-up of 200
 * such refusals took 9-11 s, 0.4 s after). Counted by the whole schema's `safeParse` calls.
 */
const state = z.object({ nums: z.array(z.number()), n: z.number().max(100) });
const model = defineModel({
  name: "refusals",
  state,
  initial: { nums: [1, 2, 3], n: 0 },
  commands: {
    bump: {
      args: z.object({ by: z.number() }),
      apply(d, { by }) {
        d.n += by;
      },
    },
  },
});

describe("a refused write on a large state", () => {
  it("is refused without parsing the whole state, with the reason at its path", async () => {
    const log = new MemoryLog();
    const sync = await createSynchronizer({ log, model, snapshots: false, compaction: false });
    const errors: StateSyncError[] = [];
    sync.on("error", (e) => errors.push(e));
    // After a genesis entry the first checked command checks the whole state once.
    await sync.updateUnconditionally("bump", { by: 1 });
    await sync.update((d) => {
      d.n -= 1;
    });
    const whole = vi.spyOn(state, "safeParse");
    try {
      const command = await sync.updateUnconditionally("bump", { by: 500 }).catch((e) => e);
      expect(command).toMatchObject({ code: "COMMAND_FAILED" });
      expect((command as Error).message).toMatch(/✖ Too big: expected number to be <=100\s+→ at n/);
      const update = await sync
        .update((d) => {
          d.n = 1000;
        })
        .catch((e) => e);
      expect(update).toMatchObject({ code: "VALIDATION" });
      expect((update as Error).message).toMatch(/→ at n/);
      expect(whole.mock.calls.length).toBe(0);
      // A write the check along the paths cannot judge alone still gets the whole verdict.
      await sync.update((d) => {
        d.nums.length = 2;
      });
      expect(sync.state.nums).toEqual([1, 2]);
      expect(sync.state.n).toBe(0);
    } finally {
      whole.mockRestore();
      await sync.close();
    }
  });
});
