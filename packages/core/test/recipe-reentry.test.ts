import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { defineModel } from "../src/model.js";
import { MemoryLog } from "../src/memory-log.js";
import { createSynchronizer } from "../src/synchronizer.js";
import { counterModel } from "./fixtures.js";

/**
 * Found by a fresh-eyes trial (stop 26): `update()` called from inside a recipe was not noticed;
 * each of the outer update's 64 runs queued another update, the outer one failed RETRY_LIMIT,
 * and all 64 inner ones committed. Now the inner call throws `VALIDATION`, the recipe fails with
 * it, and nothing is appended.
 */
describe("update() called from inside a recipe", () => {
  it("fails the recipe and its update with VALIDATION; nothing is appended", async () => {
    const log = new MemoryLog();
    const a = await createSynchronizer({ log, model: counterModel });
    const before = (await log.info()).latestRevision;
    let inner: unknown;
    const outer = a.update((d) => {
      d.count += 1;
      inner = a.update("increment", { by: 1 });
    });
    await expect(outer).rejects.toMatchObject({
      code: "VALIDATION",
      message: expect.stringMatching(/^update\(\) was called from inside a recipe/),
    });
    expect(inner).toBeUndefined(); // it threw: no promise to lose
    const unconditional = a.update((d) => {
      void a.updateUnconditionally("increment", { by: 1 });
      d.count += 1;
    });
    await expect(unconditional).rejects.toMatchObject({ code: "VALIDATION" });
    expect((await log.info()).latestRevision).toBe(before);
    // Outside a recipe, both work as usual.
    await a.update("increment", { by: 2 });
    await a.updateUnconditionally("increment", { by: 3 });
    expect(a.state.count).toBe(5);
    await a.close();
  });

  // A fresh-eyes trial (stop 26) on the first fix: a command's apply run from the log (an
  // unconditional command) could still call update(), and every replica that applied it
  // appended (one command, three more entries with three replicas).
  it("a command's apply run from the log that calls update() fails alike on every replica", async () => {
    const holder: { sync?: { update(recipe: (d: { n: number }) => void): Promise<unknown> } } = {};
    const model = defineModel({
      name: "reentry",
      state: z.object({ n: z.number().int() }),
      initial: { n: 0 },
      commands: {
        bump: {
          args: z.object({}),
          apply(d) {
            d.n += 1;
            void holder.sync?.update((x) => void (x.n += 100));
          },
        },
      },
    });
    const log = new MemoryLog();
    const a = await createSynchronizer({ log, model });
    const b = await createSynchronizer({ log: log.handle(), model });
    holder.sync = a;
    const before = (await log.info()).latestRevision;
    await expect(a.updateUnconditionally("bump", {})).rejects.toMatchObject({
      code: "COMMAND_FAILED",
      details: { committed: true, reason: "threw" },
    });
    await b.waitFor(before + 1);
    expect((await log.info()).latestRevision).toBe(before + 1); // the command alone
    expect([a.state.n, b.state.n]).toEqual([0, 0]); // a no-op on every replica alike
    await Promise.all([a.close(), b.close()]);
  });
});
