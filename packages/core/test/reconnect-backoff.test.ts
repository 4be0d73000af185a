import { MemoryLog, StateSyncError, type RevisionedLog } from "@statesync/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { open } from "./fixtures.js";

afterEach(() => {
  vi.useRealTimers();
});

/** A handle of `log` whose openings' `info()` (the first request of each) are counted. */
function counted(log: MemoryLog, delayMs = 0) {
  const base = log.handle();
  const calls = { total: 0, inFlight: 0, mostInFlight: 0, notReady: false };
  const handle: RevisionedLog = Object.create(base);
  handle.info = async () => {
    // Only the openings' requests (the configuration watch asks too).
    if (!/Opener\.(open|connect) /.test(new Error().stack ?? "")) return base.info();
    calls.total += 1;
    calls.inFlight += 1;
    calls.mostInFlight = Math.max(calls.mostInFlight, calls.inFlight);
    try {
      if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
      if (calls.notReady) throw new StateSyncError("UNAVAILABLE", "JetStream is not ready yet");
      return await base.info();
    } finally {
      calls.inFlight -= 1;
    }
  };
  return { handle, calls };
}

/**
 * A replica whose log cannot be reached when it opens tries again with a backoff that grows
 * (100 ms doubling to 3 s, jittered), and at once when the log says it is back. Before, each
 * failed opening scheduled its retry at the first step: about 400 tries in 30 s, for each of
 * 10,000 replicas opening against a server that is restarting (issue 13).
 */
describe("reopening an unreachable log", () => {
  it("backs off while the log is down and opens as soon as it is back", async () => {
    vi.useFakeTimers();
    const log = new MemoryLog();
    log.setOffline(true);
    const { handle, calls } = counted(log);
    const sync = await open(handle, { clientId: "r", waitFor: "restored", compaction: false });
    await vi.advanceTimersByTimeAsync(30_000);
    expect(calls.total).toBeGreaterThan(5);
    expect(calls.total).toBeLessThan(30);
    expect(sync.status).toBe("offline");
    log.setOffline(false);
    await vi.advanceTimersByTimeAsync(150);
    expect(sync.status).toBe("live");
    vi.useRealTimers();
    await sync.close();
  });

  it("opens once at a time: a retry or the log's 'online' joins the opening in flight", async () => {
    vi.useFakeTimers();
    const log = new MemoryLog();
    log.setOffline(true);
    // Slow openings that fail while the connection is up (a server still recovering JetStream),
    // and a connection that flaps: "online" arrives while an opening is in flight.
    const { handle, calls } = counted(log, 400);
    calls.notReady = true;
    const sync = await open(handle, { clientId: "r", waitFor: "restored", compaction: false });
    for (let i = 0; i < 20; i++) {
      log.setOffline(i % 2 === 1);
      await vi.advanceTimersByTimeAsync(150);
    }
    expect(sync.status).toBe("offline");
    calls.notReady = false;
    log.setOffline(false);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(sync.status).toBe("live");
    expect(calls.mostInFlight).toBe(1);
    vi.useRealTimers();
    await sync.close();
  });
});
