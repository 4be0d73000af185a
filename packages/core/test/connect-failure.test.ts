import { describe, expect, it } from "vitest";
import { connectFailure, keepConnecting, redactServer } from "@statesync/core";

// Failed TLS handshakes are read by the Node package (packages/node/test/tls-failure.test.ts).
describe("connectFailure", () => {
  it("errors keep their meaning: credentials refused, unreachable, TIMEOUT, unusable options", () => {
    const code = (c: string) => connectFailure(Object.assign(new Error(c), { code: c })).code;
    expect(code("AUTHORIZATION_VIOLATION")).toBe("PERMISSION_DENIED");
    expect(code("CONNECTION_REFUSED")).toBe("UNAVAILABLE");
    expect(code("TIMEOUT")).toBe("UNAVAILABLE");
    expect(code("INVALID_OPTION")).toBe("VALIDATION");
    expect(connectFailure(new Error("boom"), ["nats://a:1", "nats://b:2"]).message).toBe(
      "cannot connect to nats://a:1, nats://b:2: boom",
    );
  });

  it("says what a browser's failed WebSocket tells: closed before the NATS handshake, not UNKNOWN_ERROR", () => {
    // A trial: a refused ws:// connection read `cannot connect to ws://127.0.0.1:14323:
    // UNKNOWN_ERROR`. nats.ws rejects with a NatsError whose message is undefined (a WebSocket
    // error event carries no reason, by design) and code UNKNOWN_ERROR.
    const natsWsError = Object.assign(new Error(), { message: undefined, code: "UNKNOWN_ERROR" });
    const e = connectFailure(natsWsError, "ws://127.0.0.1:14323");
    expect(e.code).toBe("UNAVAILABLE");
    expect(e.message).toMatch(
      /^cannot connect to ws:\/\/127\.0\.0\.1:14323: the WebSocket closed before the NATS handshake/,
    );
    expect(e.message).toMatch(/refused/);
    expect(e.message).not.toMatch(/UNKNOWN_ERROR/);
    expect(e.details).toEqual({ natsCode: "UNKNOWN_ERROR" });
    // An UNKNOWN_ERROR that says more keeps its own words.
    const said = Object.assign(new Error("socket hang up"), { code: "UNKNOWN_ERROR" });
    expect(connectFailure(said, "ws://h:1").message).toBe(
      "cannot connect to ws://h:1: socket hang up",
    );
  });

  it("never puts credentials of a server URL into the message (user info masked)", async () => {
    const e = connectFailure(new Error("boom"), [
      "nats://alice:s3cret@127.0.0.1:4222",
      "tls://t0ken@b.example:4443",
      "c:4222",
    ]);
    expect(e.message).toBe(
      "cannot connect to nats://alice:***@127.0.0.1:4222, tls://***@b.example:4443, c:4222: boom",
    );
    expect(connectFailure(new Error("boom"), "alice:s3cret@h:1").message).toBe(
      "cannot connect to alice:***@h:1: boom",
    );
    // The background connection of every runtime words its failures the same way.
    const bg = keepConnecting<{ close(): Promise<void>; isClosed(): boolean }>(
      () => Promise.reject(new Error("refused")),
      {
        target: "ws://bob:pw@h:8080/nats",
      },
    );
    const seen = await new Promise<string>((resolve) => bg.errors((err) => resolve(err.message)));
    await bg.cancel();
    await bg.connection.catch(() => undefined);
    expect(seen).toBe("cannot connect to ws://bob:***@h:8080/nats: refused");
  });

  it("redactServer keeps everything but the user info", () => {
    expect(redactServer("nats://127.0.0.1:4222")).toBe("nats://127.0.0.1:4222");
    expect(redactServer("nats://a:p@ss@h:1")).toBe("nats://a:***@h:1");
    expect(redactServer("wss://h/path@x")).toBe("wss://h/path@x");
    expect(redactServer("u:p@h")).toBe("u:***@h");
  });
});
