import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "nats";
import { JetStreamLog, startNatsServer, type NatsServer } from "@statesync/node";
import { codeOf } from "../helpers.js";
import { credentials, documentedConfigs, tcpAs } from "../support/permissions.js";
import { closeAtEnd, openLedger } from "../support/workload.js";

/**
 * Issue 10, case 10, its end: a replica that cannot write says so. The documented read-only user
 * of docs/permissions.md follows the stream (`live`), and once its append is denied it reports
 * `writable: false` with the `PERMISSION_DENIED` error, once, while a writer stays writable.
 */
describe("a read-only replica says it cannot write (real nats-server, docs/permissions.md)", () => {
  let server: NatsServer;
  let operator: NatsConnection;
  beforeAll(async () => {
    server = await startNatsServer({ extraConfig: documentedConfigs()["own-stream"] });
    operator = await tcpAs(server.url, "operator");
    await (await JetStreamLog.open({ connection: operator, stream: "FLAGS" })).close();
  });
  afterAll(async () => {
    await operator?.close().catch(() => undefined);
    await server?.stop();
  });

  it("flags-reader: live, and not writable after its update is denied; flags-writer stays writable", async () => {
    const open = (user: string) =>
      openLedger({
        servers: server.url,
        connectOptions: credentials(user),
        stream: "FLAGS",
        create: false,
      });
    const writer = await open("flags-writer");
    const reader = await open("flags-reader");
    closeAtEnd(writer, reader);
    const changes: Array<[boolean, string | undefined]> = [];
    reader.on("writable", (writable, error) => changes.push([writable, error?.code]));
    expect(reader.writable).toBe(true); // learned from writing: it has not tried yet
    expect(await codeOf(reader.update("increment", { by: 1, opId: "r1" }))).toBe(
      "PERMISSION_DENIED",
    );
    expect(await codeOf(reader.updateUnconditionally("note", { text: "r" }))).toBe(
      "PERMISSION_DENIED",
    );
    expect([reader.writable, reader.writeError?.code, reader.status]).toEqual([
      false,
      "PERMISSION_DENIED",
      "live",
    ]);
    expect(changes).toEqual([[false, "PERMISSION_DENIED"]]);
    // It keeps following, and still says it cannot write.
    const { revision } = await writer.update("increment", { by: 1, opId: "w1" });
    await reader.waitFor(revision);
    expect(reader.state.ops).toEqual(["w1"]);
    expect([reader.writable, writer.writable, writer.writeError]).toEqual([false, true, undefined]);
  });
});
