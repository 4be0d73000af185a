import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  connectNats,
  openSynchronizer,
  startNatsServer,
  StateSyncError,
  type NatsServer,
} from "@statesync/node";
import { rejection, uniqueStream } from "./helpers.js";
import { makeCertificates } from "./support/certificates.js";
import { counter } from "./support/models.js";
import { startPlainServer, type PlainServer } from "./support/plain-server.js";

/**
 * `tls://` server URLs require TLS. Before, nats.js (v2) ignored the scheme: against a server
 * that offers no TLS (or an impostor that says so), `openSynchronizer` and `connectNats` (the
 * CLI's connect) sent `CONNECT {"user":"alice","pass":"s3cret",…}` in clear text.
 */
describe("tls:// against a server that offers no TLS", () => {
  let plain: PlainServer;
  beforeEach(async () => {
    plain = await startPlainServer();
  });
  afterEach(async () => {
    await plain.stop();
  });

  const credentials = { user: "alice", pass: "s3cret" };
  const open = (servers: string | string[], connectOptions: object = credentials) =>
    openSynchronizer({
      servers,
      stream: uniqueStream("TLSURL"),
      model: counter,
      snapshots: false,
      requestTimeoutMs: 5_000,
      connectOptions,
    });

  it("openSynchronizer rejects, typed, and the password never leaves the client", async () => {
    const error = await rejection(open(plain.tlsUrl));
    expect(error).toBeInstanceOf(StateSyncError);
    expect(error.code).toBe("UNSUPPORTED_SERVER");
    expect(error.message).toMatch(
      /^cannot connect to tls:\/\/127\.0\.0\.1:\d+: .*does not offer TLS/,
    );
    expect(plain.connections()).toBeGreaterThan(0);
    expect(plain.received()).not.toContain("CONNECT");
    expect(plain.received()).not.toContain("s3cret");
  });

  it("connectNats (the CLI's connect) refuses the same way", async () => {
    const error = await rejection(connectNats({ servers: plain.tlsUrl, ...credentials }));
    expect(error).toBeInstanceOf(StateSyncError);
    expect(error.code).toBe("UNSUPPORTED_SERVER");
    expect(plain.connections()).toBeGreaterThan(0);
    expect(plain.received()).not.toContain("s3cret");
  });

  it("TLS options of the caller are kept, TLS still required", async () => {
    const error = await rejection(
      connectNats({ servers: [plain.tlsUrl], ...credentials, tls: { handshakeFirst: false } }),
    );
    expect(error.code).toBe("UNSUPPORTED_SERVER");
    expect(plain.received()).not.toContain("s3cret");
  });

  it("a list mixing tls:// with nats:// or host:port is refused before connecting (VALIDATION)", async () => {
    const port = plain.tlsUrl.split(":").pop()!;
    for (const other of [`nats://127.0.0.1:${port}`, `127.0.0.1:${port}`]) {
      const servers = [plain.tlsUrl, other];
      const opened = await rejection(open(servers));
      expect([opened.code, opened.message]).toEqual([
        "VALIDATION",
        expect.stringMatching(/mixes tls:\/\/ with other URLs/),
      ]);
      const direct = await rejection(connectNats({ servers, ...credentials }));
      expect(direct.code).toBe("VALIDATION");
    }
    expect(plain.connections()).toBe(0);
  });

  it("tls: null (TLS off) with tls:// URLs is refused (VALIDATION)", async () => {
    const error = await rejection(open(plain.tlsUrl, { ...credentials, tls: null }));
    expect(error.code).toBe("VALIDATION");
    expect(error.message).toMatch(/tls: null/);
    expect(plain.connections()).toBe(0);
  });
});

/** A nats-server with TLS (no client certificates asked for) and a tls:// URL: connects. */
describe("tls:// against a nats-server with TLS", () => {
  let dir: string;
  let server: NatsServer;
  const file = (name: string) => path.join(dir, name);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "statesync-tls-url-"));
    makeCertificates(dir);
    server = await startNatsServer({
      extraConfig: `tls { cert_file: "${file("server.pem")}", key_file: "${file("server-key.pem")}" }`,
    });
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("with connectOptions.tls.caFile: a replica opens and writes", async () => {
    const sync = await openSynchronizer({
      servers: server.url.replace("nats://", "tls://"),
      stream: uniqueStream("TLSURL"),
      model: counter,
      snapshots: false,
      connectOptions: { tls: { caFile: file("ca.pem") } },
    });
    await sync.update("increment", { by: 2 });
    expect(sync.state.count).toBe(2);
    await sync.close();
  });
});
