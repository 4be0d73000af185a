import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "../support/workload.js";

/**
 * Issue 10, case 11: in the 32-process soak, 6 of 9 periodic compactions failed with
 * `RETRY_LIMIT`: a snapshot entry is a conditional append of the whole state and lost every race
 * to the small updates of busy writers, so a busy log grew without bound. A compaction now
 * announces itself after three lost races like any writer (an intent entry) and the others let
 * it go first. Six writers update without pause while a live replica compacts again and again:
 * every compaction completes, and the history checks out.
 */
describe("a busy state compacts (real nats-server)", () => {
  const ctx = useNatsServer();

  it("six writers without pause; every compaction of a live replica completes", async () => {
    const stream = uniqueStream("BUSY");
    const names = ["w0", "w1", "w2", "w3", "w4", "w5"];
    const replicas: Record<string, LedgerSync> = {};
    for (const clientId of [...names, "compactor"]) {
      replicas[clientId] = await openLedger({ servers: ctx.server.url, stream, clientId });
    }
    closeAtEnd(...Object.values(replicas));
    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(
      history,
      names.map((name, i) => ({
        name,
        sync: replicas[name]!,
        kind: i % 3 === 0 ? ("unconditional" as const) : ("conditional" as const),
      })),
    );
    const compacted: number[] = [];
    try {
      for (let round = 0; round < 5; round++) {
        await workload.waitForOk(40);
        compacted.push((await replicas.compactor!.compact()).revision);
      }
    } finally {
      await workload.stop();
    }
    expect(compacted).toHaveLength(5);
    expect(replicas.compactor!.stats.compactions).toBe(5);
    await verify(history, replicas, { withLog: false });
    const first = (await replicas.compactor!.history())[0];
    expect(first?.kind).toBe("snapshot");
  });
});
