import path from "node:path";
import { describe, expect, it } from "vitest";
import { tcp, uniqueStream, useNatsServer } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { closeAtEnd, openLedger, startWorkload, verify } from "../support/workload.js";

/**
 * Issue 10, case 4: a client had a valid file snapshot at revision 7 and an operator purged the
 * whole stream (first sequence 8, no messages). On reopen the replica reported `CORRUPT_SNAPSHOT
 * ... no entry at revision 7`, deleted the file and rejected `TRUNCATED`. Nothing after its
 * revision is missing, so the snapshot is used, and the replica goes on writing; the history
 * checker checks the run across the purge.
 */
describe("the whole stream purged under a local snapshot (real nats-server)", () => {
  const ctx = useNatsServer();

  it("the snapshot of the same log is used, kept, and the replica goes on; the history checks out", async () => {
    const stream = uniqueStream("PURGED");
    const snapshotDir = path.join(ctx.dir, stream);
    const open = (clientId: string) =>
      openLedger({ servers: ctx.server.url, stream, clientId, snapshots: undefined, snapshotDir });
    const history = new History();
    const first = await open("a");
    closeAtEnd(first);
    history.watch("a", first);
    let workload = startWorkload(history, [{ name: "a", sync: first, kind: "mixed" }]);
    try {
      await workload.waitForOk(6);
    } finally {
      await workload.stop();
    }
    const before = { revision: first.revision, state: first.state };
    await first.close(); // saves its snapshot at its revision
    const nc = await tcp(ctx.server.url);
    try {
      await (await nc.jetstreamManager()).streams.purge(stream);
    } finally {
      await nc.close();
    }
    const again = await open("a");
    closeAtEnd(again);
    const errors: string[] = [];
    again.on("error", (e) => errors.push(e.code));
    expect(again.status).toBe("live");
    expect(again.revision).toBe(before.revision);
    expect(again.state).toEqual(before.state);
    expect(again.stats.snapshotsRestored).toBe(1);
    history.watch("a-again", again);
    workload = startWorkload(history, [{ name: "a2", sync: again, kind: "mixed" }]);
    try {
      await workload.waitForOk(6);
    } finally {
      await workload.stop();
    }
    expect(errors).toEqual([]);
    // A replica without the snapshot can start only from a snapshot entry: compact, then join.
    await again.compact();
    const joiner = await openLedger({ servers: ctx.server.url, stream, clientId: "joiner" });
    closeAtEnd(joiner);
    const replicas: Record<string, LedgerSync> = { again, joiner };
    await verify(history, replicas, { withLog: false });
    expect(joiner.state).toEqual(again.state);
  });
});
