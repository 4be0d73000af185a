import { describe, expect, it, vi } from "vitest";
import type { JetStreamAdapter } from "../src/jetstream/adapter.js";
import { ConnectionGate } from "../src/jetstream/connection-gate.js";
import type { NatsStatusLike } from "../src/jetstream/nats-types.js";

/**
 * `ConnectionGate.suspect` (called after a request timed out): a PING that gets no PONG within
 * the timeout drops the connection, so the log says `offline` at once instead of after nats.js's
 * own PINGs (20 to 30 s); a PING answered in time, or a connection that was lost or closed
 * meanwhile, leaves it alone. The fake connection answers the PING only when told to.
 */
function fakeConnection() {
  let answer: (() => void) | undefined;
  let received = 0;
  const statuses: Array<(s: NatsStatusLike) => void> = [];
  const adapter = {
    clientLine: "v2",
    connection: {},
    info: undefined,
    status: () => ({
      async *[Symbol.asyncIterator]() {
        for (;;) yield await new Promise<NatsStatusLike>((r) => statuses.push(r));
      },
    }),
    closed: () => new Promise<void>(() => undefined),
    isClosed: () => false,
    flush: vi.fn(() => new Promise<void>((r) => (answer = r))),
    reconnect: vi.fn(async () => {
      for (const s of statuses.splice(0)) s({ type: "disconnect", data: "" });
    }),
    receivedBytes: () => received,
    open: () => Promise.reject(new Error("not used")),
  } satisfies JetStreamAdapter;
  const emit = (type: string) => {
    for (const s of statuses.splice(0)) s({ type, data: "" });
  };
  const receive = (bytes: number) => void (received += bytes);
  return { adapter, answer: () => answer?.(), emit, receive };
}

/** Runs `test` on vitest's fake timers, restoring the real ones after. */
async function onFakeTimers(test: () => Promise<void>): Promise<void> {
  vi.useFakeTimers();
  try {
    await test();
  } finally {
    vi.useRealTimers();
  }
}

async function openGate(adapter: JetStreamAdapter): Promise<ConnectionGate> {
  const gate = new ConnectionGate(adapter);
  await gate.get(1_000);
  return gate;
}

describe("the probe of a connection after a request timed out", () => {
  it("drops a connection whose server does not answer the PING: offline", () =>
    onFakeTimers(async () => {
      const c = fakeConnection();
      const gate = await openGate(c.adapter);
      expect(gate.status).toBe("online");
      gate.suspect(5_000);
      gate.suspect(5_000); // one probe at a time
      expect(c.adapter.flush).toHaveBeenCalledTimes(1);
      await vi.advanceTimersByTimeAsync(4_999);
      expect(c.adapter.reconnect).not.toHaveBeenCalled();
      await vi.advanceTimersByTimeAsync(1);
      expect(c.adapter.reconnect).toHaveBeenCalledTimes(1);
      await vi.advanceTimersByTimeAsync(0);
      expect(gate.status).toBe("offline");
      gate.suspect(5_000); // none while offline
      expect(c.adapter.flush).toHaveBeenCalledTimes(1);
      gate.close();
    }));

  it("leaves a connection alone whose server answers, or that was lost meanwhile", () =>
    onFakeTimers(async () => {
      const c = fakeConnection();
      const gate = await openGate(c.adapter);
      gate.suspect(5_000);
      c.answer();
      await vi.advanceTimersByTimeAsync(10_000);
      expect(c.adapter.reconnect).not.toHaveBeenCalled();
      expect(gate.status).toBe("online");

      gate.suspect(5_000); // a second probe once the first ended
      expect(c.adapter.flush).toHaveBeenCalledTimes(2);
      await vi.advanceTimersByTimeAsync(0);
      c.emit("disconnect");
      await vi.advanceTimersByTimeAsync(0);
      expect(gate.status).toBe("offline");
      c.emit("reconnect"); // lost and back meanwhile: the new connection is not suspect
      await vi.advanceTimersByTimeAsync(10_000);
      expect(c.adapter.reconnect).not.toHaveBeenCalled();
      expect(gate.status).toBe("online");

      gate.suspect(5_000);
      gate.close(); // a closed log stops its probe
      await vi.advanceTimersByTimeAsync(10_000);
      expect(c.adapter.reconnect).not.toHaveBeenCalled();
    }));

  it("waits one round more when its timer ran late (a blocked event loop), so an unread PONG counts", () =>
    onFakeTimers(async () => {
      const c = fakeConnection();
      const gate = await openGate(c.adapter);
      gate.suspect(5_000);
      vi.setSystemTime(Date.now() + 8_000); // the clock moved on while the loop was blocked
      await vi.advanceTimersByTimeAsync(5_000); // the timer runs, 8 s late
      expect(c.adapter.reconnect).not.toHaveBeenCalled();
      c.answer(); // the PONG, read once I/O runs
      await vi.advanceTimersByTimeAsync(1_000);
      expect(c.adapter.reconnect).not.toHaveBeenCalled();
      expect(gate.status).toBe("online");

      gate.suspect(5_000); // late again, and still no PONG: dropped after the extra round
      vi.setSystemTime(Date.now() + 8_000);
      await vi.advanceTimersByTimeAsync(5_000);
      expect(c.adapter.reconnect).not.toHaveBeenCalled();
      await vi.advanceTimersByTimeAsync(500);
      expect(c.adapter.reconnect).toHaveBeenCalledTimes(1);
      gate.close();
    }));

  it("leaves alone a busy server that sends other answers while the PING waits behind queued data", () =>
    onFakeTimers(async () => {
      const c = fakeConnection();
      const gate = await openGate(c.adapter);
      gate.suspect(5_000);
      await vi.advanceTimersByTimeAsync(2_000);
      c.receive(120); // an acknowledgement of an earlier publish: the server is alive
      await vi.advanceTimersByTimeAsync(5_000);
      expect(c.adapter.reconnect).not.toHaveBeenCalled();
      expect(gate.status).toBe("online");

      gate.suspect(5_000); // silent this time: dropped
      await vi.advanceTimersByTimeAsync(5_000);
      expect(c.adapter.reconnect).toHaveBeenCalledTimes(1);
      gate.close();
    }));
});
