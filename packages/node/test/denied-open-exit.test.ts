import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { JetStreamLog, startNatsServer, type NatsServer } from "@statesync/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tcp, uniqueStream } from "./helpers.js";

const PROGRAM = fileURLToPath(new URL("./support/denied-open-exit.mjs", import.meta.url));

/**
 * A fresh-eyes trial: a user allowed the stream's info and message reads but not consumer
 * creation got its open refused (`PERMISSION_DENIED`, at once), and its process then stayed alive
 * for about 15 minutes: nats.js retried the consumer's first creation 30 times, 30 s apart, on a
 * timer nothing stopped. Outcome only: the program exits by itself, before a generous deadline.
 */
describe("a replica whose open is refused for want of a permission", () => {
  let server: NatsServer;
  const users = (stream: string) =>
    [
      "authorization { users = [",
      '  { user: operator, password: "op" }',
      '  { user: reader, password: "r", permissions: {',
      `      publish: { allow: [ "${stream}.log", "$JS.API.STREAM.INFO.${stream}", "$JS.API.STREAM.MSG.GET.${stream}" ] }`,
      '      subscribe: { allow: [ "_INBOX_reader.>" ] } } } ] }',
    ].join("\n");
  const stream = uniqueStream("DENIED");
  beforeAll(async () => {
    server = await startNatsServer({ extraConfig: users(stream) });
    const nc = await tcp(server.url, { user: "operator", pass: "op" });
    await (await JetStreamLog.open({ connection: nc, stream })).close();
    await nc.close();
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("rejects PERMISSION_DENIED and its process exits by itself", async () => {
    const child = spawn(
      process.execPath,
      [PROGRAM, server.url, stream, "reader", "r", "_INBOX_reader"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
    const late = new Promise<"still running">((r) => setTimeout(() => r("still running"), 20_000));
    const outcome = await Promise.race([exited, late]);
    if (outcome === "still running") child.kill("SIGKILL");
    expect(out).toBe("PERMISSION_DENIED");
    expect(outcome).toBe(0);
  }, 60_000);
});
