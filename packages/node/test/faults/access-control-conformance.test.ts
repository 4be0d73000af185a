import { afterAll, beforeAll } from "vitest";
import { JetStreamLog } from "@statesync/node";
import { runRevisionedLogConformance } from "@statesync/core/testing";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { CLIENT_LINES, type ClientLine } from "../support/client-lines.js";
import { credentials, documentedConfigs, tcpAs } from "../support/permissions.js";

/**
 * The RevisionedLog conformance suite, run by a tenant of the shared stream with exactly the
 * permissions of docs/permissions.md (no `STREAM.MSG.GET`, consumers only on its own subjects):
 * `JetStreamLog` reads single entries through consumers filtered to the tenant's subject and must
 * behave as it does with every permission. TCP and WebSocket, the tenant on either nats.js line
 * (the operator on v2); and following through fan-out (docs/fanout.md: the subscribe permission
 * on the republished subject, gaps through consumers since direct get is denied). Truncation goes through the operator, as the documentation says it must
 * (purge reaches every tenant's subjects).
 */
let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer({ extraConfig: documentedConfigs()["shared-stream"] });
});
afterAll(async () => {
  await server?.stop();
});

let counter = 0;

function harness(line: ClientLine, transport: "tcp" | "ws", fanout = false) {
  const tenantAs = (user: string) =>
    transport === "tcp"
      ? line.tcp(server.url, credentials(user))
      : line.websocket(server.wsUrl, credentials(user));
  return async () => {
    counter += 1;
    const key = `tenant-a.c${counter}`;
    const operator = await tcpAs(server.url, "operator");
    const tenant = await tenantAs("tenant-a-writer");
    const connections = [operator, tenant];
    const ensure = async () =>
      (
        await JetStreamLog.open({
          connection: operator,
          stream: "BOARDS",
          key: "tenant-b.noise",
          fanout: true, // the stream republishes: tenants may follow either way
        })
      ).close();
    await ensure();
    // Truncation (compaction) is the operator's in this setup: a tenant may not purge.
    const truncator = new JetStreamLog({ connection: operator, stream: "BOARDS", key });
    const open = (nc = tenant) => {
      const log = new JetStreamLog({
        connection: nc,
        stream: "BOARDS",
        key,
        create: false,
        ...line.logOptions,
        ...(fanout ? { fanout: { tailCheckMs: 500 } } : {}),
      });
      log.truncateBefore = (revision) => truncator.truncateBefore(revision);
      return log;
    };
    // Another tenant writes to the same stream all along: revisions of this state have gaps.
    const noise = await JetStreamLog.open({
      connection: operator,
      stream: "BOARDS",
      key: "tenant-b.noise",
    });
    let n = 0;
    const timer = setInterval(() => {
      n += 1;
      noise
        .appendUnconditional(new Uint8Array([n % 256]), `noise-${counter}-${n}`)
        .catch(() => undefined);
    }, 11);
    return {
      log: open(),
      openAnother: async () => {
        const nc = await tenantAs("tenant-a-writer");
        connections.push(nc);
        return open(nc);
      },
      openSibling: async () =>
        new JetStreamLog({
          connection: tenant,
          stream: "BOARDS",
          key: `${key}-sibling`,
          create: false,
          ...line.logOptions,
          ...(fanout ? { fanout: { tailCheckMs: 500 } } : {}),
        }),
      recreate: async () => {
        // Only the operator may delete and create the stream.
        const jsm = await operator.jetstreamManager();
        await jsm.streams.delete("BOARDS");
        await ensure();
        return open();
      },
      teardown: async () => {
        clearInterval(timer);
        await noise.close();
        await truncator.close();
        await Promise.all(connections.map((c) => c.close()));
      },
    };
  };
}

for (const line of CLIENT_LINES) {
  runRevisionedLogConformance(
    `JetStreamLog as a tenant with the documented permissions, TCP, nats.js ${line.name}`,
    harness(line, "tcp"),
  );
  runRevisionedLogConformance(
    `JetStreamLog as a tenant with the documented permissions, WebSocket, nats.js ${line.name}`,
    harness(line, "ws"),
  );
  runRevisionedLogConformance(
    `JetStreamLog as a tenant with the documented permissions, fan-out, TCP, nats.js ${line.name}`,
    harness(line, "tcp", true),
  );
}
