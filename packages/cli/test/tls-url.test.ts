import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startPlainServer, type PlainServer } from "../../node/test/support/plain-server.js";
import { runCli } from "./helpers.js";

/**
 * `--server tls://…` requires TLS. Before, `statesync info -s tls://… --user alice --password
 * s3cret` against a server that offers no TLS sent the password in clear text in its CONNECT.
 */
describe("statesync --server tls:// against a server that offers no TLS", () => {
  let plain: PlainServer;
  beforeEach(async () => {
    plain = await startPlainServer();
  });
  afterEach(async () => {
    await plain.stop();
  });

  const credentials = ["--user", "alice", "--password", "s3cret", "--timeout", "2000"];

  it("fails (exit 1, UNSUPPORTED_SERVER) without sending the credentials", async () => {
    const r = await runCli(["info", "--stream", "C1", "-s", plain.tlsUrl, ...credentials]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^statesync: UNSUPPORTED_SERVER: cannot connect to tls:\/\/127\.0\.0\.1:\d+: .*does not offer TLS/,
    );
    expect(plain.connections()).toBeGreaterThan(0);
    expect(plain.received()).not.toContain("CONNECT");
    expect(plain.received()).not.toContain("s3cret");
  });

  it("a --server list mixing tls:// and nats:// is refused (VALIDATION) before connecting", async () => {
    const port = plain.tlsUrl.split(":").pop()!;
    const servers = `${plain.tlsUrl},nats://127.0.0.1:${port}`;
    const r = await runCli(["info", "--stream", "C1", "-s", servers, ...credentials]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^statesync: VALIDATION: .*mixes tls:\/\/ with other URLs/);
    expect(plain.connections()).toBe(0);
  });
});
