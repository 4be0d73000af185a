import { getFreePort, startNatsServer, type NatsServer } from "@statesync/node";
import { connect } from "nats";

/** A JetStream cluster of nats-server processes on loopback (see {@link startNatsCluster}). */
export interface NatsCluster {
  readonly nodes: readonly NatsServer[];
  /** `server_name` of each node, in the order of `nodes`. */
  readonly names: readonly string[];
  /** Client URLs of every node (give them all to a client). */
  readonly urls: readonly string[];
  /** The node named `name`. */
  node(name: string): NatsServer;
  /**
   * Waits until the cluster can place a stream replicated on every node (after a start or a
   * node loss): a probe stream of `nodes.length` replicas is created and deleted. An account
   * info answer is not enough: a 2.10 meta leader answers it while it still refuses placement
   * ("no suitable peers for placement", 10005) because it has not yet heard from every peer.
   * Rejects after `timeoutMs` with the last error and each node's last log lines.
   */
  waitForJetStream(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts `size` (default 3) nodes of one JetStream cluster on loopback (jetstream-notes
 * "Cluster"): each its own `server_name`, store directory, client port and `cluster { name,
 * listen, routes }` block routing to all the others. Resolves once the cluster places a stream
 * replicated on every node ({@link NatsCluster.waitForJetStream}).
 *
 * Started again on fresh ports (up to 3 times) when a node cannot bind its port (ports from
 * getFreePort() can be taken by a parallel test file before the node binds them) or when the
 * cluster does not place a replicated stream within 45 s of starting: one CI run on a loaded
 * machine had a 2.10 cluster refuse every R3 stream for two minutes ("no suitable peers for
 * placement"); that is a fixture that did not form, not the state under test.
 */
export async function startNatsCluster(size = 3, name = "statesync"): Promise<NatsCluster> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(size, name);
    } catch (err) {
      const retry = /address already in use|JetStream not ready/.test(String(err));
      if (attempt >= 3 || !retry) throw err;
    }
  }
}

/** Node `n`'s last `lines` log lines, each prefixed with its name (for a failure message). */
function lastLogLines(cluster: NatsCluster, lines = 15): string {
  return cluster.nodes
    .map((node, i) => {
      const tail = node.output().trimEnd().split("\n").slice(-lines);
      return tail.map((l) => `  [${cluster.names[i]}] ${l}`).join("\n");
    })
    .join("\n");
}

async function startOnce(size: number, name: string): Promise<NatsCluster> {
  const clusterPorts = await Promise.all(Array.from({ length: size }, () => getFreePort()));
  const clientPorts = await Promise.all(Array.from({ length: size }, () => getFreePort()));
  const names = clientPorts.map((_, i) => `${name}-n${i + 1}`);
  const nodes: NatsServer[] = [];
  try {
    const started = await Promise.allSettled(
      clientPorts.map((port, i) =>
        startNatsServer({
          port,
          serverName: names[i]!,
          extraConfig: [
            `cluster {`,
            `  name: ${JSON.stringify(name)}`,
            `  listen: "127.0.0.1:${clusterPorts[i]}"`,
            `  routes: [`,
            ...clusterPorts
              .filter((_, j) => j !== i)
              .map((p) => `    "nats-route://127.0.0.1:${p}"`),
            `  ]`,
            `}`,
          ].join("\n"),
        }),
      ),
    );
    for (const s of started) if (s.status === "fulfilled") nodes.push(s.value);
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  } catch (err) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw err;
  }
  const cluster: NatsCluster = {
    nodes,
    names,
    urls: nodes.map((n) => n.url),
    node(n) {
      const i = names.indexOf(n);
      if (i < 0) throw new Error(`no node named ${n}`);
      return nodes[i]!;
    },
    async waitForJetStream(timeoutMs = 45_000) {
      const deadline = Date.now() + timeoutMs;
      const nc = await connect({ servers: cluster.urls as string[], maxReconnectAttempts: -1 });
      const probe = `PLACEMENT_PROBE_${process.pid}_${Date.now().toString(36)}`;
      try {
        for (;;) {
          try {
            const jsm = await nc.jetstreamManager({ timeout: 2_000 });
            await jsm.streams.add({ name: probe, subjects: [`${probe}.>`], num_replicas: size });
            await jsm.streams.delete(probe);
            return;
          } catch (err) {
            if (Date.now() > deadline) {
              throw new Error(
                `JetStream not ready after ${timeoutMs} ms: ${String(err)}\n${lastLogLines(cluster)}`,
              );
            }
            await new Promise((r) => setTimeout(r, 250));
          }
        }
      } finally {
        await nc.close();
      }
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
  try {
    await cluster.waitForJetStream();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
