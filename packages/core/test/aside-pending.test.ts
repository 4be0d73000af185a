import { MemoryLog, type StateSyncError } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { openQueued } from "./pending/fixtures.js";

/**
 * A pending update whose recipe fails, beside a later one of its queue whose append is stored
 * but its outcome unknown (ack lost, the re-send denied): UNKNOWN_OUTCOME for the batch.
 */
describe("aside + pending queue: a failed update beside an entry of unknown outcome", () => {
  it("is refused, never counted as committed (no entry holds it)", async () => {
    const log = new MemoryLog();
    const a = await openQueued(log);
    log.setOffline(true);
    const take = a.update("take", { card: "x" }); // fails everywhere: no x, ever
    const add = a.update("add", { card: "y" });
    take.catch(() => undefined);
    add.catch(() => undefined);
    await take.queued;
    await add.queued;
    log.loseNextAcks(1); // the batch's entry (with add y, origin seq 2) is stored, ack lost
    log.failNextAppends(1, "PERMISSION_DENIED"); // its re-send denied: UNKNOWN_OUTCOME
    log.setOffline(false);
    const settled = (p: Promise<unknown>) =>
      Promise.race([
        p.then(
          () => "committed",
          (e: StateSyncError) => e.code,
        ),
        new Promise((r) => setTimeout(() => r("pending"), 20_000)),
      ]);
    const [t, d] = await Promise.all([settled(take), settled(add)]);
    expect(d).toBe("committed");
    // The log holds no take (with 9c6ebd8 alone it resolved as committed: the round threw and the
    // set-aside take was put back and failed with the entry's UNKNOWN_OUTCOME).
    expect(t).toBe("UPDATE_REFUSED");
    expect(a.state.cards).toEqual(["y"]);
    await a.close();
  });
});
