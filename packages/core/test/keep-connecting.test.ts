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

  it("says why there is no connection: the last failure, else an attempt with no answer", async () => {
    let attempts = 0;
    const wakes: (() => void)[] = [];
    let answer: ((nc: FakeConnection) => void) | undefined;
    const bg = keepConnecting<FakeConnection>(
      (signal) => {
        if (attempts++ === 0) return Promise.reject(new Error("CONNECTION_REFUSED"));
        // The second attempt hangs (a frozen server) until answered or cancelled.
        return new Promise((resolve, reject) => {
          answer = resolve;
          signal.addEventListener("abort", () => reject(new Error("aborted")));
        });
      },
      { target: "nats://h:1", silentMs: 50, wake: (retry) => (wakes.push(retry), () => undefined) },
    );
    const seen: StateSyncError[] = [];
    bg.errors((e) => seen.push(e));
    while (attempts < 2) {
      wakes[0]?.();
      await new Promise((r) => setTimeout(r, 5));
    }
    // Just started after a refusal: the refusal.
    expect(bg.whyNotConnected()?.message).toBe("cannot connect to nats://h:1: CONNECTION_REFUSED");
    await new Promise((r) => setTimeout(r, 80));
    // In flight past silentMs: no answer, for as long as it has waited.
    const why = bg.whyNotConnected()!;
    expect(why.code).toBe("UNAVAILABLE");
    expect(why.message).toMatch(/^cannot connect to nats:\/\/h:1: no answer within \d+ ms/);
    expect(why.details).toEqual({ noAnswer: true });
    // Not reported as an event: an attempt had failed already, and its failures speak.
    expect(seen.map((e) => e.message)).toEqual([
      "cannot connect to nats://h:1: CONNECTION_REFUSED",
    ]);
    answer!(new FakeConnection());
    await bg.connection;
    expect(bg.whyNotConnected()).toBeUndefined();
    await bg.cancel();
  });

  it("reports a first attempt that has no answer within silentMs, once, while it goes on", async () => {
    const bg = keepConnecting<FakeConnection>(
      (signal) =>
        new Promise((_, reject) =>
          signal.addEventListener("abort", () => reject(new Error("aborted"))),
        ),
      { target: ["nats://a:1", "nats://b:2"], silentMs: 30 },
    );
    const seen: StateSyncError[] = [];
    bg.errors((e) => seen.push(e));
    await new Promise((r) => setTimeout(r, 120));
    expect(seen.map((e) => [e.code, e.message])).toEqual([
      [
        "UNAVAILABLE",
        "cannot connect to nats://a:1, nats://b:2: no answer within 30 ms (a server that is " +
          "frozen or overloaded, not a NATS server, or a network that drops the packets; still " +
          "trying)",
      ],
    ]);
    await bg.cancel();
    expect(bg.whyNotConnected()).toBeUndefined();
    expect(await bg.connection.catch((e: StateSyncError) => e.code)).toBe("CLOSED");
  });
});
