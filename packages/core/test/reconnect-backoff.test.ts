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

/** With fake timers: a replica opened (`"restored"`) on a log that cannot be reached yet. */
async function openUnreachable(delayMs = 0, notReady = false) {
  vi.useFakeTimers();
  const log = new MemoryLog();
  log.setOffline(true);
  const { handle, calls } = counted(log, delayMs);
  calls.notReady = notReady;
  const sync = await open(handle, { clientId: "r", waitFor: "restored", compaction: false });
  return { log, calls, sync };
}

/**
 * A replica whose log cannot be reached when it opens tries again with a backoff that grows
 * (100 ms doubling to 3 s, jittered), and at once when the log says it is back. Before, each
 * failed opening scheduled its retry at the first step: about 400 tries in 30 s, for each of
 * 10,000 replicas opening against a server that is restarting (issue 13).
 */
describe("reopening an unreachable log", () => {
  it("backs off while the log is down and opens as soon as it is back", async () => {
    const { log, calls, sync } = await openUnreachable();
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
    // Slow openings that fail while the connection is up (a server still recovering JetStream),
    // and a connection that flaps: "online" arrives while an opening is in flight.
    const { log, calls, sync } = await openUnreachable(400, true);
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

  it("paces the openings of callers too: ten synced() callers do not open ten times as often", async () => {
    // Before: each caller's own retries (50 ms doubling to 2 s) started openings of their own,
    // 118 in 15 s with ten callers against 11 for a replica left alone (fresh-eyes trial).
    const { log, calls, sync } = await openUnreachable();
    const waits = Array.from({ length: 10 }, () => sync.synced());
    await vi.advanceTimersByTimeAsync(15_000);
    expect(calls.total).toBeLessThan(25);
    log.setOffline(false);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(await Promise.all(waits)).toEqual(Array(10).fill(sync.revision));
    vi.useRealTimers();
    await sync.close();
  });

  it("an update made before the log could be opened waits for it (up to outcomeTimeoutMs)", async () => {
    // Before: it failed at once, UNAVAILABLE "the log's first entry could not be written or
    // read yet", whatever its outcomeTimeoutMs (fresh-eyes trial).
    const { log, sync } = await openUnreachable();
    const update = sync.update("increment", { by: 1 }, { outcomeTimeoutMs: 60_000 });
    const settled = update.then(
      () => "committed",
      (e: { code?: string }) => e.code,
    );
    await vi.advanceTimersByTimeAsync(5_000);
    log.setOffline(false);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await settled).toBe("committed");
    expect(sync.state.count).toBe(1);
    const late = sync.update("increment", { by: 1 }, { outcomeTimeoutMs: 1_000 });
    expect((await late).revision).toBeGreaterThan(0);
    vi.useRealTimers();
    await sync.close();
  });
});
