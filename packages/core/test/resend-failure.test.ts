import { describe, expect, it } from "vitest";
import { MemoryLog } from "@statesync/core";
import { codeOf, open } from "./fixtures.js";

/**
 * Regression test (found with the fault tests' history checker, whose rule is: an update that
 * definitely failed must not be in the log): the acknowledgement of an append is lost (it is
 * stored), and the re-send fails for another reason than unavailability, here a permission
 * denial. The update used to reject with PERMISSION_DENIED, which says "nothing appended",
 * though the log held it. It now rejects with UNKNOWN_OUTCOME (in the log at most once).
 */
describe("a re-send that fails after a lost acknowledgement", () => {
  it("reports UNKNOWN_OUTCOME, not the re-send's error (conditional)", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    log.loseNextAcks(1);
    log.failNextAppends(1, "PERMISSION_DENIED");
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("UNKNOWN_OUTCOME");
    expect(log.size).toBe(2); // it was stored, once
    await a.fetchUpdates();
    expect(a.state.count).toBe(1);
    await a.close();
  });

  it("unconditional: the look-up before the re-send finds the first attempt (nothing re-sent)", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    log.loseNextAcks(1);
    log.failNextAppends(1, "PERMISSION_DENIED"); // would fail a re-send: none is sent
    const result = await a.updateUnconditionally("increment", { by: 1 });
    expect(result.revision).toBe(2);
    expect(log.size).toBe(2);
    await a.fetchUpdates();
    expect(a.state.count).toBe(1);
    await a.close();
  });

  it("unconditional: a re-send denied after an unanswered attempt is UNKNOWN_OUTCOME", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    log.failNextAppends(1); // no answer (UNAVAILABLE): it may still land, as far as a knows
    log.failNextAppends(1, "PERMISSION_DENIED");
    expect(await codeOf(a.updateUnconditionally("increment", { by: 1 }))).toBe("UNKNOWN_OUTCOME");
    expect(log.size).toBe(1);
    await a.close();
  });

  it("a first attempt that is denied is still PERMISSION_DENIED (nothing appended)", async () => {
    const log = new MemoryLog();
    const a = await open(log, { live: false });
    log.failNextAppends(1, "PERMISSION_DENIED");
    expect(await codeOf(a.update("increment", { by: 1 }))).toBe("PERMISSION_DENIED");
    expect(log.size).toBe(1);
    await a.close();
  });
});
