import { JetStreamLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { tcp, uniqueStream, useNatsServer } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { ledger } from "../support/models.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "../support/workload.js";

/**
 * Issue 10, case 10: the first client to open a new stream had a clock before 1970; its genesis
 * entry (negative timestamp) was refused by every replica, and from then on every update of
 * every client failed `UNAVAILABLE` under a `live` status. Today's SDK never writes such an entry
 * (core test `unusable-first-entry.test.ts`); a stream an older client left that way is started
 * again by the first replicas that open it, once, and everyone converges (history checker).
 */
describe("a stream whose first entry is unusable (real nats-server)", () => {
  const ctx = useNatsServer();

  it("replicas opening at once start it again from the initial state, once, and converge", async () => {
    const stream = uniqueStream("BADGEN");
    const nc = await tcp(ctx.server.url);
    try {
      const log = await JetStreamLog.open({ connection: nc, stream });
      const badGenesis = {
        v: 1,
        kind: "genesis",
        ts: -5,
        client: "old",
        model: ledger.name,
        version: ledger.version,
        initialHash: ledger.initialHash,
      };
      await log.appendUnconditional(new TextEncoder().encode(JSON.stringify(badGenesis)), "old-g");
      await log.close();
    } finally {
      await nc.close();
    }
    const names = ["a", "b", "c"];
    const opened = await Promise.all(
      names.map((clientId) => openLedger({ servers: ctx.server.url, stream, clientId })),
    );
    const replicas: Record<string, LedgerSync> = Object.fromEntries(
      names.map((n, i) => [n, opened[i]!]),
    );
    closeAtEnd(...opened);
    for (const r of opened) expect(r.status).toBe("live");
    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(
      history,
      names.map((name) => ({ name, sync: replicas[name]!, kind: "mixed" as const })),
    );
    try {
      await workload.waitForOk(30);
    } finally {
      await workload.stop();
    }
    const verdict = await verify(history, replicas, { withLog: false });
    expect(verdict.stats.failed).toBe(0);
    for (const r of opened) expect(r.writable).toBe(true);
    const kinds = (await replicas.a!.history()).map((h) => h.kind);
    expect(kinds.slice(0, 2)).toEqual(["malformed", "snapshot"]);
    expect(kinds.filter((k) => k === "snapshot")).toHaveLength(1);
  });
});
