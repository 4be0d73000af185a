import { describe, expect, it } from "vitest";
import { connectFailure } from "@statesync/core";

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
});
