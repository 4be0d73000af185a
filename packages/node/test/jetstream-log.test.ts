import { JetStreamLog, type NatsConnectionLike } from "@statesync/core";
import { runRevisionedLogConformance } from "@statesync/core/testing";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { afterAll, beforeAll } from "vitest";
import { tcp, uniqueStream, websocket } from "./helpers.js";

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(async () => {
  await server?.stop();
});

type Closable = NatsConnectionLike & { close(): Promise<void> };

/** Message ids `runRevisionedLogConformance` appends with. */
const SUITE_IDS = [
  ..."a b u u1 u2 same u-1 g big late".split(" "),
  ...["id-a", "id-b", "id-x", "id-y", "ma", "mb", "c3"],
  ...Array.from({ length: 20 }, (_, i) => [
    `f${i}`,
    `w${i % 4}`,
    `m${i % 5}`,
    `x${i % 4}`,
    `t${i % 6}`,
  ]).flat(),
];

/** A conformance factory: a fresh stream per test; `key` selects the shared layout. */
function harness(connectFn: () => Promise<Closable>, key?: string) {
  return async () => {
    const stream = uniqueStream(key ? "SH" : "OWN");
    const main = await connectFn();
    const connections: Closable[] = [main];
    const open = async (nc: Closable) => new JetStreamLog({ connection: nc, stream, key });
    const log = await open(main);
    // In the shared layout other states write to the same stream all along, so revisions of
    // this state have gaps; one of them first uses the message ids the suite uses, which must
    // not deduplicate this state's appends (JetStream deduplicates per stream).
    let noise: ReturnType<typeof setInterval> | undefined;
    if (key) {
      const other = await JetStreamLog.open({ connection: main, stream, key: "other.state" });
      for (const id of SUITE_IDS) await other.appendUnconditional(new Uint8Array([1]), id);
      let n = 0;
      noise = setInterval(() => {
        n += 1;
        other.appendUnconditional(new Uint8Array([n % 256]), `n${n}`).catch(() => undefined);
      }, 7);
    }
    return {
      log,
      openSibling: async () =>
        key
          ? new JetStreamLog({ connection: main, stream, key: `${key}-sibling` })
          : new JetStreamLog({ connection: main, stream: `${stream}_SIB` }),
      openAnother: async () => {
        const nc = await connectFn();
        connections.push(nc);
        return open(nc);
      },
      recreate: async () => {
        const jsm = await (main as any).jetstreamManager();
        await jsm.streams.delete(stream);
        return open(main);
      },
      teardown: async () => {
        if (noise) clearInterval(noise);
        try {
          const jsm = await (main as any).jetstreamManager();
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

runRevisionedLogConformance(
  "JetStreamLog own stream, TCP",
  harness(() => tcp(server.url)),
);
runRevisionedLogConformance(
  "JetStreamLog shared stream, TCP",
  harness(() => tcp(server.url), "tenant-1.config"),
);
runRevisionedLogConformance(
  "JetStreamLog own stream, WebSocket",
  harness(() => websocket(server.wsUrl)),
);
runRevisionedLogConformance(
  "JetStreamLog shared stream, WebSocket",
  harness(() => websocket(server.wsUrl), "tenant_2"),
);
