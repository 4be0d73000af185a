import { describe, expect, it } from "vitest";
import { uniqueStream, useNatsServer } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { TcpProxy } from "../support/tcp-proxy.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "../support/workload.js";

/**
 * Issue 10, case 1: a catch-up racing a compaction stalled for good (`TRUNCATED ... after
 * revision 1 (latest: 51)`): the catch-up had asked for the latest revision, the compaction then
 * truncated everything up to it, and the snapshot entry that replaced it lay past the target.
 * Every reading path must continue from the snapshot entry: a non-live `fetchUpdates`, a replica
 * opening, and a compactor that is itself behind the log; `waitFor`, a live follower after a
 * reconnection, `history` and `stateAt` (second test). Checked with the history checker.
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

  it("waitFor, a live follower reconnecting, history and stateAt get over concurrent compactions", async () => {
    const stream = uniqueStream("CRACE2");
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    const open = (clientId: string, live = true, servers = ctx.server.url) =>
      openLedger({ servers, stream, clientId, live });
    const replicas: Record<string, LedgerSync> = {
      a: await open("a"),
      b: await open("b"),
      reference: await open("reference"),
      // Live, behind a proxy: it is cut off while entries are written and truncated away.
      cut: await open("cut", true, proxy.url),
      waiter: await open("waiter", false),
      inspector: await open("inspector", false),
      compactor: await open("compactor", false),
    };
    closeAtEnd(...Object.values(replicas), proxy);
    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(history, [
      { name: "a", sync: replicas.a!, kind: "mixed" },
      { name: "b", sync: replicas.b!, kind: "unconditional" },
    ]);
    const { cut, waiter, inspector, compactor, reference } = replicas as Record<string, LedgerSync>;
    const outcomes = { states: 0, truncated: 0 };
    try {
      for (let round = 0; round < 6; round++) {
        proxy.setRefusing(true);
        proxy.cutAll();
        await workload.waitForOk(30);
        // Asked while the compaction truncates: the true state at `r`, or TRUNCATED.
        const r = reference!.revision;
        const expected = reference!.state;
        const [, , stateAtR, listed] = await Promise.all([
          compactor!.compact(),
          waiter!.waitFor(r),
          inspector!.stateAt(r).then(
            (s) => s,
            (e: { code?: string }) => {
              if (e.code !== "TRUNCATED") throw e;
              return undefined;
            },
          ),
          inspector!.history(),
        ]);
        if (stateAtR === undefined) outcomes.truncated += 1;
        else {
          outcomes.states += 1;
          expect(stateAtR).toEqual(expected);
        }
        // A listing of the entries retained at one moment: it starts from genesis or a snapshot
        // entry and has no hole (the stream is the state's own: every revision is one of its).
        expect(["genesis", "snapshot"]).toContain(listed[0]?.kind);
        const revisions = listed.map((h) => h.revision);
        expect(revisions).toEqual(revisions.map((_, i) => revisions[0]! + i));
        // After the compaction: the state at its snapshot entry is the compactor's.
        expect(await inspector!.stateAt(compactor!.revision)).toEqual(compactor!.state);
        expect(waiter!.revision).toBeGreaterThanOrEqual(r);
        // The cut-off replica reconnects after its entries were truncated away.
        expect(cut!.revision).toBeLessThan(r);
        proxy.setRefusing(false);
        await cut!.waitFor(compactor!.revision);
        for (const s of [cut, waiter, inspector]) expect(s!.status).not.toBe("stalled");
      }
    } finally {
      proxy.setRefusing(false);
      await workload.stop();
    }
    await verify(history, replicas, { withLog: false });
    expect(outcomes.states + outcomes.truncated).toBe(6);
    expect(compactor!.stats.compactions).toBe(6);
    await Promise.all(Object.values(replicas).map((r) => r.close()));
  });
});
