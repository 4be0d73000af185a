import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "nats";
import { isStateSyncError, JetStreamLog } from "@statesync/node";
import { codeOf, uniqueStream } from "../helpers.js";
import { History, type LedgerSync } from "../support/checker.js";
import { startNatsCluster, type NatsCluster } from "../support/cluster.js";
import { closeAtEnd, openLedger, sleep, startWorkload, verify } from "../support/workload.js";

/**
 * A three-node JetStream cluster on loopback, the state's stream replicated three times:
 * the stream leader is killed during updates; clients keep going after the re-election.
 * The shared-stream layout is refused on clustered servers before 2.9.21 (they only pre-check
 * `Nats-Expected-Last-Subject-Sequence` on the leader) and allowed from 2.9.21: the test reads
 * the version (`nc.info.version`) and asserts what that version must do (docs/servers.md).
 */
let cluster: NatsCluster;
let admin: NatsConnection;
beforeAll(async () => {
  cluster = await startNatsCluster(3);
  admin = await connect({ servers: [...cluster.urls], maxReconnectAttempts: -1 });
});
afterAll(async () => {
  await admin?.close();
  await cluster?.stop();
});

/**
 * Stream info, retried while the cluster settles: a node may not know a new stream yet, and
 * while the killed leader's replacement is elected (seconds) the admin connection reconnects
 * and JetStream API requests time out. Both the manager and the request are retried until
 * `timeoutMs` has passed; only then does the last error fail the test.
 */
async function streamInfo(stream: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const jsm = await admin.jetstreamManager({ checkAPI: false, timeout: 2_000 });
      return await jsm.streams.info(stream);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(100);
    }
  }
}

/**
 * Creates the state's R3 stream (as the first replica would) and waits until the cluster serves
 * it: a stream info names its leader and a log's own `info()` succeeds. On a loaded machine a
 * 2.10 cluster answered "stream not found" (10059) to stream info for a moment after the create
 * returned, and a replica that meets that takes its stream for deleted and stalls (TRUNCATED):
 * a start-up race this test is not about (docs/servers.md). Creating first keeps the test on
 * the leader kill.
 */
async function createReplicatedStream(
  stream: string,
  key?: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const log = new JetStreamLog({
      connection: admin,
      stream,
      key,
      replicas: 3,
      requestTimeoutMs: 5_000,
    });
    try {
      await log.info(); // creates the stream, then reads it back
      if ((await streamInfo(stream)).cluster?.leader) return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(200);
    } finally {
      await log.close();
    }
  }
}

async function streamLeader(stream: string): Promise<string> {
  for (;;) {
    const leader = (await streamInfo(stream)).cluster?.leader;
    if (leader) return leader;
    await sleep(100);
  }
}

describe("a three-node JetStream cluster", () => {
  it("kill the R3 stream's leader during updates: re-election, clients keep going, nothing lost", async () => {
    const stream = uniqueStream("R3");
    await createReplicatedStream(stream);
    const replicas: Record<string, LedgerSync> = {};
    for (const name of ["a", "b", "c"]) {
      replicas[name] = await openLedger({
        servers: [...cluster.urls],
        stream,
        replicas: 3,
        clientId: name,
      });
    }
    closeAtEnd(...Object.values(replicas));
    const info = await streamInfo(stream);
    expect(info.config.num_replicas).toBe(3);

    const history = new History();
    history.watchAll(replicas);
    const workload = startWorkload(
      history,
      [
        { name: "a", sync: replicas.a!, kind: "conditional" },
        { name: "b", sync: replicas.b!, kind: "unconditional" },
        { name: "c", sync: replicas.c!, kind: "mixed" },
      ],
      // The election takes seconds; keep re-sending through it.
      { update: { outcomeTimeoutMs: 20_000 } },
    );
    const before = await streamLeader(stream);
    let after: string;
    try {
      await workload.waitForOk(30);
      await cluster.node(before).kill("SIGKILL");
      await workload.waitForOk(30, 60_000);
      after = await streamLeader(stream);
    } finally {
      await workload.stop();
    }
    expect(after).not.toBe(before);
    // Checked on the two surviving nodes, which hold a quorum. (Restarting the killed leader
    // before this check once rolled back acknowledged writes on 2.9.10: the restarted node's
    // unreplicated tail replaced what the new leader had committed. A server bug, see
    // docs/guarantees.md; the SDK cannot undo a log that the server rewrites.)
    const verdict = await verify(history, replicas, { settleTimeoutMs: 60_000 });
    expect(verdict.stats.ok).toBeGreaterThanOrEqual(60);
    await Promise.all(Object.values(replicas).map((r) => r.close()));
    // The killed node rejoins and the cluster serves JetStream again.
    await cluster.node(before).restart();
    await cluster.waitForJetStream();
  }, 180_000);

  it("the shared-stream layout: refused on a clustered server before 2.9.21 (UNSUPPORTED_SERVER), served from 2.9.21", async () => {
    expect(admin.info?.cluster).toBeTruthy();
    const version = admin.info!.version;
    if (enforcesSubjectSequenceOnCluster(version)) {
      // 2.10.27 in the nats-2.10 project: two states share one R3 stream, and two writers of one state conflict and
      // retry rather than both landing on the same revision.
      const stream = uniqueStream("SHARED_R3");
      await createReplicatedStream(stream, "tenant.a");
      const open = (key: string, clientId: string) =>
        openLedger({ servers: [...cluster.urls], stream, key, replicas: 3, clientId });
      const [a1, a2, b] = [
        await open("tenant.a", "a1"),
        await open("tenant.a", "a2"),
        await open("tenant.b", "b"),
      ];
      closeAtEnd(a1, a2, b);
      await Promise.all(
        [a1, a2].flatMap((r, i) =>
          [1, 2, 3].map((n) => r.update("increment", { by: 1, opId: `a${i}.${n}` })),
        ),
      );
      await b.update("increment", { by: 5, opId: "b.1" });
      await a1.waitFor(a2.revision);
      await a2.waitFor(a1.revision);
      expect([a1.state.count, a2.state.count, b.state.count]).toEqual([6, 6, 5]);
      expect(a1.state.ops).toEqual(a2.state.ops);
      expect(b.state.ops).toEqual(["b.1"]);
      await Promise.all([a1.close(), a2.close(), b.close()]);
    } else {
      // 2.9.10 in the node project.
      expect(
        await codeOf(
          openLedger({
            servers: [...cluster.urls],
            stream: "SHARED_R3",
            key: "tenant.a",
            replicas: 3,
          }),
        ),
      ).toBe("UNSUPPORTED_SERVER");
      const log = new JetStreamLog({ connection: admin, stream: "SHARED_R3", key: "tenant.a" });
      const err = await log.info().catch((e: unknown) => e);
      expect(isStateSyncError(err, "UNSUPPORTED_SERVER")).toBe(true);
      await log.close();
      // Nothing was created: the refusal comes before the stream is touched.
      const jsm = await admin.jetstreamManager({ checkAPI: false, timeout: 10_000 });
      expect(await codeOf(jsm.streams.info("SHARED_R3"))).toBe("404");
    }
    // The own-stream layout on the same cluster is fine on every version.
    const stream = uniqueStream("R3OWN");
    await createReplicatedStream(stream);
    const own = await openLedger({ servers: [...cluster.urls], stream, replicas: 3 });
    await own.synced(); // the cluster may still be taking the restarted node back
    await own.update("increment", { by: 1, opId: "x" });
    expect(own.state.count).toBe(1);
    await own.close();
  });
});

/**
 * Whether a clustered nats-server of `version` checks `Nats-Expected-Last-Subject-Sequence` when
 * it applies a message (2.9.21 and later; jetstream-notes "Conditional append"). Written out
 * here rather than taken from the SDK, so that a wrong threshold in the SDK fails this test.
 */
function enforcesSubjectSequenceOnCluster(version: string): boolean {
  const [major = 0, minor = 0, patch = 0] = version.split(/[.-]/).map(Number);
  return major > 2 || (major === 2 && (minor > 9 || (minor === 9 && patch >= 21)));
}
