import { createHash } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { credsAuthenticator, nkeys } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeCertificates, tlsServerConfig } from "../../node/test/support/certificates.js";
import { openCounter, runCli, runJson, uniqueStream } from "./helpers.js";

/** An nkey pair of the `nats` client (operator, account or user). */
type KeyPair = ReturnType<typeof nkeys.createOperator>;

/**
 * `--creds` and `--tls-*` against servers that require them (issue 11: "connection credentials as
 * the `nats` CLI takes them"): a server in operator (JWT) mode with a user's credentials file, and
 * a server that requires TLS with client certificates. Both are made here: the JWTs signed with
 * the `nats` client's own nkeys, the certificates with the system's `openssl`.
 */

const b64url = (b: Uint8Array | string) => Buffer.from(b).toString("base64url");

/** A NATS JWT (`ed25519-nkey`) of `claims`, issued and signed by `signer`. */
function jwt(signer: KeyPair, claims: { sub: string; name: string; nats: object }): string {
  const header = b64url(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }));
  const body: Record<string, unknown> = {
    ...claims,
    iat: Math.floor(Date.now() / 1000),
    iss: signer.getPublicKey(),
  };
  body.jti = createHash("sha256").update(JSON.stringify(body)).digest("base64url");
  const payload = b64url(JSON.stringify(body));
  return `${header}.${payload}.${b64url(signer.sign(new TextEncoder().encode(`${header}.${payload}`)))}`;
}

/** Server config of an operator with one JetStream-enabled account, and a user's creds file. */
function operatorSetup(): { config: string; creds: string } {
  const [op, account, system, user] = [
    nkeys.createOperator(),
    nkeys.createAccount(),
    nkeys.createAccount(),
    nkeys.createUser(),
  ];
  const unlimited = { subs: -1, data: -1, payload: -1, conn: -1, leaf: -1, imports: -1 };
  const jetstream = { mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };
  const nats = (type: string, more: object = {}) => ({ type, version: 2, ...more });
  const accountJwt = jwt(op, {
    sub: account.getPublicKey(),
    name: "app",
    nats: nats("account", { limits: { ...unlimited, exports: -1, wildcards: true, ...jetstream } }),
  });
  const systemJwt = jwt(op, { sub: system.getPublicKey(), name: "SYS", nats: nats("account") });
  const userJwt = jwt(account, {
    sub: user.getPublicKey(),
    name: "operator-on-call",
    nats: nats("user", { pub: {}, sub: {}, subs: -1, data: -1, payload: -1 }),
  });
  const config = [
    `operator: ${jwt(op, { sub: op.getPublicKey(), name: "op", nats: nats("operator") })}`,
    `system_account: ${system.getPublicKey()}`,
    "resolver: MEMORY",
    `resolver_preload: { ${account.getPublicKey()}: ${accountJwt}, ${system.getPublicKey()}: ${systemJwt} }`,
  ].join("\n");
  const seed = new TextDecoder().decode(user.getSeed());
  const creds = [
    "-----BEGIN NATS USER JWT-----",
    userJwt,
    "------END NATS USER JWT------",
    "",
    "-----BEGIN USER NKEY SEED-----",
    seed,
    "------END USER NKEY SEED------",
    "",
  ].join("\n");
  return { config, creds };
}

describe("statesync credentials: --creds and --tls-*", () => {
  let dir: string;
  let operator: NatsServer;
  let tls: NatsServer;
  let creds: string;
  const file = (name: string) => path.join(dir, name);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "statesync-cli-creds-"));
    const setup = operatorSetup();
    creds = file("user.creds");
    await writeFile(creds, setup.creds);
    operator = await startNatsServer({ extraConfig: setup.config });
    makeCertificates(dir);
    tls = await startNatsServer({ extraConfig: tlsServerConfig(dir) });
  });
  afterAll(async () => {
    await operator?.stop();
    await tls?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("--creds: reads a stream in an account of an operator-mode server; without them, PERMISSION_DENIED", async () => {
    const stream = uniqueStream("CREDS");
    const text = await readFile(creds);
    const a = await openCounter(operator.url, stream, {
      connectOptions: { authenticator: credsAuthenticator(new Uint8Array(text)) },
    });
    await a.update("increment", { by: 3 });
    await a.close();
    const at = ["--server", operator.url, "--stream", stream];
    const info = await runJson(["info", ...at, "--creds", creds]);
    expect(info).toMatchObject({ revision: 2, model: { name: "counter" } });
    const history = await runJson(["history", ...at, "--creds", creds]);
    expect(history.map((h: { kind: string }) => h.kind)).toEqual(["genesis", "update"]);
    const without = await runCli(["info", ...at]);
    expect(without.code).toBe(1);
    expect(without.stderr).toMatch(/^statesync: PERMISSION_DENIED: cannot connect to /);
  });

  it("--tls-ca with --tls-cert/--tls-key: reads a stream on a server that requires client certificates", async () => {
    const stream = uniqueStream("TLS");
    const url = tls.url.replace("nats://", "tls://");
    const clientTls = {
      certFile: file("client.pem"),
      keyFile: file("client-key.pem"),
      caFile: file("ca.pem"),
    };
    const a = await openCounter(url, stream, { connectOptions: { tls: clientTls } });
    await a.update("increment", { by: 4 });
    await a.close();
    const certificate = ["--tls-cert", file("client.pem"), "--tls-key", file("client-key.pem")];
    // --timeout: room for the refusal to be read on a loaded machine (the probe starts after a
    // quarter of it, at most 1.5 s); the outcome asserted stays the same.
    const at = ["--server", url, "--stream", stream, "--timeout", "20000"];
    const info = await runJson(["info", ...at, "--tls-ca", file("ca.pem"), ...certificate]);
    expect(info).toMatchObject({ revision: 2, model: { name: "counter" } });
    // The server's certificate is checked against --tls-ca: another CA is refused...
    const otherCa = await runCli(["info", ...at, "--tls-ca", file("other-ca.pem"), ...certificate]);
    expect(otherCa.code).toBe(1);
    expect(otherCa.stderr).toMatch(
      /^statesync: UNAVAILABLE: cannot connect to tls:\S+: TLS handshake failed: this client does not trust the server's certificate \(UNABLE_TO_VERIFY_LEAF_SIGNATURE: /,
    );
    // A client without a certificate: connectNats's reading of the refusal is tested in
    // packages/node/test/tls.test.ts (the CLI prints what connectNats rejects with, as above).
  });
});
