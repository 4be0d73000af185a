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
  /** Waits until JetStream answers with a meta leader (after a start or a node loss). */
  waitForJetStream(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts `size` (default 3) nodes of one JetStream cluster on loopback (jetstream-notes
 * "Cluster"): each its own `server_name`, store directory, client port and `cluster { name,
 * listen, routes }` block routing to all the others. Resolves once JetStream has a meta leader.
 */
export async function startNatsCluster(size = 3, name = "statesync"): Promise<NatsCluster> {
  // Ports from getFreePort() can be taken by another process before the nodes bind them
  // (parallel test files): start the whole cluster again on fresh ports.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(size, name);
    } catch (err) {
      if (attempt >= 3 || !/address already in use/.test(String(err))) throw err;
    }
  }
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
    async waitForJetStream(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      const nc = await connect({ servers: cluster.urls as string[], maxReconnectAttempts: -1 });
      try {
        for (;;) {
          try {
            const jsm = await nc.jetstreamManager({ timeout: 1_000 });
            const info = await jsm.getAccountInfo();
            if (info) return;
          } catch (err) {
            if (Date.now() > deadline) throw new Error(`JetStream not ready: ${String(err)}`);
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
