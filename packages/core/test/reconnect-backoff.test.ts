import { MemoryLog, type RevisionedLog } from "@statesync/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { open } from "./fixtures.js";

afterEach(() => {
  vi.useRealTimers();
});

/**
 * A replica whose log is unreachable retries opening with a growing backoff (up to 5 s), and
 * opens at once when the log says it is back. Before, each failed opening scheduled its retry at
 * the first step: 10 s offline cost about 130 attempts.
 */
describe("reopening an unreachable log", () => {
  it("backs off while the log is down and opens as soon as it is back", async () => {
    vi.useFakeTimers();
    const log = new MemoryLog();
    log.setOffline(true);
    let infos = 0;
    const base = log.handle();
    const counted: RevisionedLog = Object.create(base);
    counted.info = () => {
      infos += 1;
      return base.info();
    };
    const sync = await open(counted, { clientId: "r", waitFor: "restored", compaction: false });
    await vi.advanceTimersByTimeAsync(30_000);
    // 100 ms · 2^n (jittered down to half), capped at 5 s: at most about 14 tries in 30 s.
    expect(infos).toBeGreaterThan(3);
    expect(infos).toBeLessThan(20);
    expect(sync.status).toBe("offline");
    log.setOffline(false);
    await vi.advanceTimersByTimeAsync(200);
    expect(sync.status).toBe("live");
    vi.useRealTimers();
    await sync.close();
  });
});
