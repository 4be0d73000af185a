import { createSynchronizer, MemoryLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { counterModel, open } from "./fixtures.js";

describe("Writer on MemoryLog", () => {
  it("resolves each update with the state right after its entry (issue 10, case 7)", async () => {
    const log = new MemoryLog();
    const a = await open(log, { clientId: "a", compaction: false });
    const b = await open(log, { clientId: "b", compaction: false });
    // Each writer awaits each update (queued updates of one writer would share one entry).
    const results = (
      await Promise.all(
        [a, b].map(async (s) => {
          const out = [];
          for (let i = 0; i < 60; i++) {
            out.push(
              await s.update((d) => {
                d.count += 1;
                return d.count;
              }),
            );
          }
          return out;
        }),
      )
    ).flat();
    for (const r of results) {
      expect(r.state.count).toBe(r.result);
      expect(await a.stateAt(r.revision)).toEqual(r.state);
    }
    await Promise.all([a.close(), b.close()]);
  });

  it("close() waits for unconditional appends already sent, and each caller learns the outcome (issue 10, case 8)", async () => {
    const log = new MemoryLog();
    const reader = await open(log.handle(), { compaction: false });
    // ownsLog: close() closes the log handle too, as openSynchronizer's replicas do.
    const a = await createSynchronizer({
      log: log.handle(),
      model: counterModel,
      compaction: false,
      clientId: "a",
      ownsLog: true,
    });
    log.setAppendDelay(40);
    const sent = Array.from({ length: 5 }, () => a.updateUnconditionally("increment", { by: 1 }));
    await new Promise((r) => setTimeout(r, 5));
    await a.close();
    const outcomes = await Promise.allSettled(sent);
    expect(outcomes.map((o) => o.status)).toEqual(Array(5).fill("fulfilled"));
    log.setAppendDelay(0);
    await reader.fetchUpdates();
    expect(reader.state.count).toBe(5);
    await reader.close();
  });
});

describe("close() with conditional updates in flight", () => {
  it("the one in flight resolves as committed; the queued ones reject CLOSED and are not stored", async () => {
    const log = new MemoryLog();
    const a = await open(log.handle(), { compaction: false, clientId: "a" });
    log.setAppendDelay(20);
    const updates = Array.from({ length: 5 }, () => a.update("increment", { by: 1 }));
    const settled = Promise.allSettled(updates); // handlers attached at once
    await new Promise((r) => setTimeout(r, 5)); // the first update is being appended
    await a.close();
    const outcomes = await settled;
    log.setAppendDelay(0);
    const reader = await open(log.handle(), { compaction: false });
    // The first left the queue alone and was stored: it must resolve (CLOSED would read as
    // "not stored", and a retry would apply it twice). The others never left the queue.
    expect(outcomes.map((o) => (o.status === "fulfilled" ? "committed" : o.reason.code))).toEqual([
      "committed",
      "CLOSED",
      "CLOSED",
      "CLOSED",
      "CLOSED",
    ]);
    expect(reader.state.count).toBe(1);
    await reader.close();
  });
});
