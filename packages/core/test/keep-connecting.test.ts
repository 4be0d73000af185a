import { describe, expect, it } from "vitest";
import { keepConnecting, type StateSyncError } from "@statesync/core";

class FakeConnection {
  closed = false;
  async close() {
    this.closed = true;
  }
  isClosed() {
    return this.closed;
  }
}

describe("keepConnecting", () => {
  it("reports why attempts fail, once per distinct cause, then nothing once connected", async () => {
    const causes = ["ECONNREFUSED", "ECONNREFUSED", "ENOTFOUND"];
    let attempts = 0;
    const wakes: (() => void)[] = [];
    const bg = keepConnecting(
      async () => {
        const cause = causes[attempts++];
        if (cause !== undefined) throw new Error(cause);
        return new FakeConnection();
      },
      { wake: (retry) => (wakes.push(retry), () => undefined) },
    );
    const seen: StateSyncError[] = [];
    const unsubscribe = bg.errors((e) => seen.push(e));
    // Skip the backoff: wake the loop until it connects.
    let nc: FakeConnection | undefined;
    void bg.connection.then((c) => (nc = c));
    while (nc === undefined) {
      wakes[0]?.();
      await new Promise((r) => setTimeout(r, 5));
    }
    expect(attempts).toBe(4);
    expect(seen.map((e) => [e.code, e.message])).toEqual([
      ["UNAVAILABLE", "cannot connect to the server: ECONNREFUSED"],
      ["UNAVAILABLE", "cannot connect to the server: ENOTFOUND"],
    ]);
    expect((seen[1]!.cause as Error).message).toBe("ENOTFOUND");
    // A subscriber after the connection was made hears nothing.
    const late: StateSyncError[] = [];
    bg.errors((e) => late.push(e));
    expect(late).toEqual([]);
    unsubscribe();
    await bg.cancel();
    expect(nc.isClosed()).toBe(true);
  });

  it("gives a late subscriber the last error at once", async () => {
    const bg = keepConnecting<FakeConnection>(async () => {
      throw new Error("CONNECTION_REFUSED");
    });
    await new Promise((r) => setTimeout(r, 20));
    const seen: string[] = [];
    bg.errors((e) => seen.push(e.message));
    expect(seen).toEqual(["cannot connect to the server: CONNECTION_REFUSED"]);
    await bg.cancel();
    expect(await bg.connection.catch((e: StateSyncError) => e.code)).toBe("CLOSED");
  });

  it("names the target, and describes errors without a message (nats.ws in a browser)", async () => {
    const errors: unknown[] = [{ code: "CONNECTION_REFUSED" }, new Error(), {}];
    let attempts = 0;
    const wakes: (() => void)[] = [];
    const bg = keepConnecting<FakeConnection>(
      async () => {
        throw errors[attempts++ % errors.length];
      },
      { target: "ws://127.0.0.1:9", wake: (retry) => (wakes.push(retry), () => undefined) },
    );
    const seen: string[] = [];
    bg.errors((e) => seen.push(e.message));
    while (attempts < 3) {
      wakes[0]?.();
      await new Promise((r) => setTimeout(r, 5));
    }
    await bg.cancel();
    expect(seen).toEqual([
      "cannot connect to ws://127.0.0.1:9: CONNECTION_REFUSED",
      "cannot connect to ws://127.0.0.1:9: Error",
      "cannot connect to ws://127.0.0.1:9: the connection failed",
    ]);
  });
});
