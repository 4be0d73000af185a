import { openSynchronizer } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer } from "./helpers.js";
import { counter } from "./support/models.js";

/** Resolves "late" after `ms`: the loser of a race against a call that should end first. */
const late = (ms: number) => new Promise<string>((r) => setTimeout(() => r("late"), ms));

/**
 * In a shared stream, revisions are the stream's sequences, and a replica's revision is its
 * key's last entry. `waitFor` a revision another key wrote waited for this key's next entry
 * after it, for ever on a quiet key (a fresh-eyes trial, stop 27). It now resolves once this
 * replica holds its key's last entry before that revision; a revision nobody wrote yet is still
 * waited for.
 */
const ctx = useNatsServer();

describe("waitFor in a shared stream", () => {
  it("reaches a revision another key wrote, and waits for one not written yet", async () => {
    const stream = uniqueStream("SHARED_WAIT");
    const open = (key: string) =>
      openSynchronizer({ servers: ctx.server.url, stream, key, model: counter, snapshots: false });
    const alpha = await open("alpha");
    const beta = await open("beta");
    try {
      await alpha.update("increment", { by: 1 });
      const { revision } = await beta.update("increment", { by: 10 }); // beta's, after alpha's
      expect(revision).toBeGreaterThan(alpha.revision);
      const reached = alpha.waitFor(revision).then(() => "reached");
      // Before, this stayed "late" (alpha is quiet); the bound only ends a test that went wrong.
      expect(await Promise.race([reached, late(10_000)])).toBe("reached");
      expect(alpha.state.count).toBe(1);

      const future = alpha.waitFor(revision + 2).then(() => "reached");
      await beta.update("increment", { by: 10 }); // revision + 1: not yet
      expect(await Promise.race([future, late(300)])).toBe("late");
      const mine = await alpha.update("increment", { by: 1 }); // revision + 2, alpha's own
      expect(mine.revision).toBe(revision + 2);
      expect(await future).toBe("reached");
    } finally {
      await alpha.close();
      await beta.close();
    }
  });
});
