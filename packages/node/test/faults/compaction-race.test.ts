import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "../support/workload.js";

/**
 * Issue 10, case 1: a catch-up racing a compaction stalled for good (`TRUNCATED ... after
 * revision 1 (latest: 51)`): the catch-up had asked for the latest revision, the compaction then
 * truncated everything up to it, and the snapshot entry that replaced it lay past the target.
 * Every reading path must continue from the snapshot entry: a non-live `fetchUpdates`, a replica
 * opening, and a compactor that is itself behind the log. Checked with the history checker.
 */
describe("catch-up racing a compaction (real nats-server)", () => {
  const ctx = useNatsServer();

  it("readers, opening replicas and a lagging compactor never stall; the history checks out", async () => {
    const stream = uniqueStream("CRACE");
    const open = (clientId: string, live = true) =>
      openLedger({ servers: ctx.server.url, stream, clientId, live });
    const replicas: Record<string, LedgerSync> = {
      a: await open("a"),
      b: await open("b"),
      reader: await open("reader", false),
      compactor: await open("compactor", false),
    };
    closeAtEnd(...Object.values(replicas));
    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(history, [
      { name: "a", sync: replicas.a!, kind: "mixed" },
      { name: "b", sync: replicas.b!, kind: "unconditional" },
    ]);
    const joiners: LedgerSync[] = [];
    try {
      for (let round = 0; round < 8; round++) {
        await workload.waitForOk(40);
        // The reader and a new replica start reading just as the (lagging) compactor truncates.
        const results = await Promise.allSettled([
          replicas.reader!.fetchUpdates(),
          open(`joiner${round}`, round % 2 === 0),
          replicas.compactor!.compact(),
        ]);
        for (const r of results) if (r.status === "rejected") throw r.reason;
        joiners.push((results[1] as PromiseFulfilledResult<LedgerSync>).value);
        expect(replicas.reader!.status).not.toBe("stalled");
      }
    } finally {
      await workload.stop();
    }
    closeAtEnd(...joiners);
    for (const [i, j] of joiners.entries()) replicas[`joiner${i}`] = j;
    const verdict = await verify(history, replicas, { withLog: false });
    expect(verdict.stats.ok).toBeGreaterThanOrEqual(320);
    expect(replicas.compactor!.stats.compactions).toBeGreaterThanOrEqual(7);
    expect(joiners.every((j) => j.status !== "stalled")).toBe(true);
    await Promise.all(Object.values(replicas).map((r) => r.close()));
  });
});
