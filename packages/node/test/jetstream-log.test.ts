import { JetStreamLog } from "@statesync/core";
import { runRevisionedLogConformance } from "@statesync/core/testing";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { afterAll, beforeAll } from "vitest";
import { uniqueStream } from "./helpers.js";
import { CLIENT_LINES, type ClientLine, type Closable } from "./support/client-lines.js";

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

/** Message ids `runRevisionedLogConformance` appends with. */
const SUITE_IDS = [
  ..."a b u u1 u2 same u-1 g big late".split(" "),
  ...["id-a", "id-b", "id-x", "id-y", "ma", "mb", "c3", "cc1", "cc2", "cc3"],
  ...["os-a", "os-b", "os-m", "os-s", "os-n"],
  ...Array.from({ length: 20 }, (_, i) => [
    `f${i}`,
    `w${i % 4}`,
    `m${i % 5}`,
    `x${i % 4}`,
    `t${i % 6}`,
  ]).flat(),
];

/**
 * A conformance factory: a fresh stream per test, connections of one client `line`; `key`
 * selects the shared layout, `fanout` the fan-out follower (docs/fanout.md).
 */
function harness(
  line: ClientLine,
  connectFn: () => Promise<Closable>,
  key?: string,
  fanout = false,
) {
  return async () => {
    const stream = uniqueStream(key ? "SH" : "OWN");
    const main = await connectFn();
    const connections: Closable[] = [main];
    const options = { ...line.logOptions, ...(fanout ? { fanout: { tailCheckMs: 500 } } : {}) };
    const open = async (nc: Closable) =>
      new JetStreamLog({ connection: nc, stream, key, ...options });
    const log = await open(main);
    // In the shared layout other states write to the same stream all along, so revisions of
    // this state have gaps; one of them first uses the message ids the suite uses, which must
    // not deduplicate this state's appends (JetStream deduplicates per stream).
    let noise: ReturnType<typeof setInterval> | undefined;
    if (key) {
      const other = await JetStreamLog.open({
        connection: main,
        stream,
        key: "other.state",
        ...options,
      });
      for (const id of SUITE_IDS) await other.appendUnconditional(new Uint8Array([1]), id);
      let n = 0;
      noise = setInterval(() => {
        n += 1;
        other.appendUnconditional(new Uint8Array([n % 256]), `n${n}`).catch(() => undefined);
      }, 7);
    }
    return {
      log,
      seesSiblingEntries: key !== undefined,
      openSibling: async () =>
        key
          ? new JetStreamLog({ connection: main, stream, key: `${key}-sibling`, ...options })
          : new JetStreamLog({ connection: main, stream: `${stream}_SIB`, ...options }),
      openAnother: async () => {
        const nc = await connectFn();
        connections.push(nc);
        return open(nc);
      },
      recreate: async () => {
        const jsm = await line.admin(main);
        await jsm.streams.delete(stream);
        return open(main);
      },
      openClosable: async () => {
        const nc = await connectFn();
        connections.push(nc);
        return { log: await open(nc), closeConnection: () => nc.close() };
      },
      teardown: async () => {
        if (noise) clearInterval(noise);
        try {
          const jsm = await line.admin(main);
          await jsm.streams.delete(stream);
          if (!key) await jsm.streams.delete(`${stream}_SIB`).catch(() => undefined);
        } catch {
          // already gone
        }
        await Promise.all(connections.map((c) => c.close()));
      },
    };
  };
}

for (const line of CLIENT_LINES) {
  const tcp = () => line.tcp(server.url);
  const ws = () => line.websocket(server.wsUrl);
  runRevisionedLogConformance(
    `JetStreamLog own stream, TCP, nats.js ${line.name}`,
    harness(line, tcp),
  );
  runRevisionedLogConformance(
    `JetStreamLog shared stream, TCP, nats.js ${line.name}`,
    harness(line, tcp, "tenant-1.config"),
  );
  runRevisionedLogConformance(
    `JetStreamLog own stream, WebSocket, nats.js ${line.name}`,
    harness(line, ws),
  );
  runRevisionedLogConformance(
    `JetStreamLog shared stream, WebSocket, nats.js ${line.name}`,
    harness(line, ws, "tenant_2"),
  );
  runRevisionedLogConformance(
    `JetStreamLog own stream, fan-out, TCP, nats.js ${line.name}`,
    harness(line, tcp, undefined, true),
  );
  runRevisionedLogConformance(
    `JetStreamLog shared stream, fan-out, TCP, nats.js ${line.name}`,
    harness(line, tcp, "tenant-3.config", true),
  );
  runRevisionedLogConformance(
    `JetStreamLog shared stream, fan-out, WebSocket, nats.js ${line.name}`,
    harness(line, ws, "tenant_4", true),
  );
}
