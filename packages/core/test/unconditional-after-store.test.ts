import { describe, expect, it } from "vitest";
import { MemoryLog } from "@statesync/core";
import { open } from "./fixtures.js";

/** A log that goes offline right after it stored an unconditional append (a server gone). */
class GoneAfterStore extends MemoryLog {
  goneAfterNext = false;
  override async appendUnconditional(data: Uint8Array, messageId: string) {
    const stored = await super.appendUnconditional(data, messageId);
    if (this.goneAfterNext) {
      this.goneAfterNext = false;
      this.setOffline(true);
    }
    return stored;
  }
}

/**
 * Once the log stored an unconditional command, its call waits until the replica applied it,
 * within the call's limits. Before, a server gone right after the acknowledgement held the call
 * until it was back (a fresh-eyes trial, stop 30: 41.6 s with `outcomeTimeoutMs: 3000`, 10.4 s
 * with a 3 s `signal`).
 */
describe("an unconditional command stored just before the log went away", () => {
  for (const limit of ["outcomeTimeoutMs", "signal"] as const) {
    it(`resolves at its ${limit}, stored and not applied yet`, async () => {
      const log = new GoneAfterStore();
      const w = await open(log, { live: false });
      log.goneAfterNext = true;
      const options =
        limit === "signal" ? { signal: AbortSignal.timeout(300) } : { outcomeTimeoutMs: 300 };
      let back = false;
      const call = w.updateUnconditionally("increment", { by: 5 }, options).then((r) => ({
        ...r,
        back,
      }));
      const timer = setTimeout(() => ((back = true), log.setOffline(false)), 3_000);
      const result = await call;
      clearTimeout(timer);
      expect(result).toEqual({ revision: 2, applied: false, back: false });
      log.setOffline(false);
      expect((await log.entryAt(2))?.messageId).toBeDefined(); // stored all the same
      expect(await w.synced()).toBe(2);
      expect(w.state.count).toBe(5);
      await w.close();
    });
  }

  it("resolves without `applied` when the replica applied it", async () => {
    const w = await open(new MemoryLog());
    expect(await w.updateUnconditionally("increment", { by: 5 })).toEqual({ revision: 2 });
    await w.close();
  });
});
