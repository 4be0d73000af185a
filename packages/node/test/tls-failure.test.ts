import { describe, expect, it } from "vitest";
import { keepConnecting, type StateSyncError } from "@statesync/core";
import { connectFailureOf as connectFailure, tlsFailure } from "@statesync/node";

/** Errors as Node's `tls` and nats.js (`nats` 2.29) reject with them. */
const alert = (name: string, text: string) =>
  Object.assign(
    new Error(
      `80DC217CE17F0000:error:0A000412:SSL routines:ssl3_read_bytes:${text}:../deps/openssl/openssl/ssl/record/rec_layer_s3.c:1601:SSL alert number 42\n`,
    ),
    { code: `ERR_SSL_${name}` },
  );
const untrusted = Object.assign(new Error("unable to verify the first certificate"), {
  code: "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
});

describe("connectFailureOf and tlsFailure (Node's TLS errors)", () => {
  it("a client certificate the server refused is PERMISSION_DENIED, in words", () => {
    const e = connectFailure(alert("SSLV3_ALERT_BAD_CERTIFICATE", "sslv3 alert bad certificate"), [
      "tls://a:4222",
    ]);
    expect([e.code, e.message]).toEqual([
      "PERMISSION_DENIED",
      "cannot connect to tls://a:4222: TLS refused by the server: it did not accept this client's certificate (sslv3 alert bad certificate)",
    ]);
    expect(e.details).toEqual({ tls: "server", natsCode: "ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE" });
    const required = tlsFailure(
      alert("TLSV13_ALERT_CERTIFICATE_REQUIRED", "tlsv13 alert certificate required"),
    );
    expect(required?.code).toBe("PERMISSION_DENIED");
    // Another alert: the server refused the handshake, not the certificate.
    expect(
      tlsFailure(alert("TLSV1_ALERT_PROTOCOL_VERSION", "tlsv1 alert protocol version")),
    ).toMatchObject({ code: "UNAVAILABLE", refusedBy: "server" });
  });

  it("a server certificate the client does not trust is UNAVAILABLE, also when nats.js wraps it", () => {
    expect(connectFailure(untrusted, "nats://b:4222").message).toBe(
      "cannot connect to nats://b:4222: TLS handshake failed: this client does not trust the server's certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate)",
    );
    const wrapped = Object.assign(new Error("TLS"), { code: "TLS", chainedError: untrusted });
    expect(tlsFailure(wrapped)).toMatchObject({ code: "UNAVAILABLE", refusedBy: "client" });
    const unloadable = Object.assign(new Error("ENOENT: no such file, open 'c.pem'"), {
      code: "TLS",
    });
    expect(connectFailure(unloadable).code).toBe("VALIDATION");
  });

  it("other errors keep their meaning: credentials refused, unreachable, TIMEOUT", () => {
    const code = (c: string) => connectFailure(Object.assign(new Error(c), { code: c })).code;
    expect(code("AUTHORIZATION_VIOLATION")).toBe("PERMISSION_DENIED");
    expect(code("CONNECTION_REFUSED")).toBe("UNAVAILABLE");
    expect(code("TIMEOUT")).toBe("UNAVAILABLE");
    expect(code("INVALID_OPTION")).toBe("VALIDATION");
    expect(tlsFailure(new Error("TIMEOUT"))).toBeUndefined();
  });

  it("keepConnecting stops at a refused client certificate and rejects with it", async () => {
    let attempts = 0;
    const bg = keepConnecting<{ close(): Promise<void>; isClosed(): boolean }>(
      async () => {
        attempts += 1;
        // What connectNats rejects with (typed before keepConnecting sees it).
        throw connectFailure(alert("SSLV3_ALERT_BAD_CERTIFICATE", "sslv3 alert bad certificate"), [
          "tls://a:4222",
        ]);
      },
      { target: "tls://a:4222" },
    );
    const error = (await bg.connection.catch((e: unknown) => e)) as StateSyncError;
    expect(attempts).toBe(1);
    expect(error.code).toBe("PERMISSION_DENIED");
    expect(error.message).toMatch(/^cannot connect to tls:\/\/a:4222: TLS refused by the server/);
    await bg.cancel();
  });
});
