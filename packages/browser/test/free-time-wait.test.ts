import { afterEach, describe, expect, it, vi } from "vitest";
import { afterFreeTime } from "../src/free-time-wait.js";

/**
 * `afterFreeTime` counts a wait in this thread's free time: a tick that fires late because the
 * page's own long task held the thread counts at most twice its length. A hidden tab's timers
 * fire late with the thread free: Chrome runs them once a second, and once a minute after five
 * minutes hidden (intensive wake-up throttling, for timers set from timer callbacks, as each
 * tick is). There the cap stretched every wait tenfold: a 10 s call to the leading tab, or a 5 s
 * IndexedDB open, gave up after ten wake-ups, about ten minutes, where one timer fired at the
 * first wake-up after its delay.
 *
 * Here the timers are driven by hand: each fires `lateMs` after it was set.
 */
function driven(lateMs: number) {
  let now = 1_000_000;
  const timers: Array<{ fn: () => void; cleared: boolean }> = [];
  vi.spyOn(Date, "now").mockImplementation(() => now);
  vi.stubGlobal("setTimeout", (fn: () => void) => {
    timers.push({ fn, cleared: false });
    return timers.length;
  });
  vi.stubGlobal("clearTimeout", (id: number) => {
    if (timers[id - 1]) timers[id - 1]!.cleared = true;
  });
  return {
    /** Fires the pending timer `lateMs` after it was set; false when none is pending. */
    wake(): boolean {
      const next = timers.find((t) => !t.cleared);
      if (!next) return false;
      next.cleared = true;
      now += lateMs;
      next.fn();
      return true;
    },
  };
}

function wakeUpsUntilExpired(waitMs: number, lateMs: number): number {
  const clock = driven(lateMs);
  let expired = false;
  afterFreeTime(waitMs, () => (expired = true));
  let wakeUps = 0;
  while (!expired && clock.wake()) wakeUps += 1;
  expect(expired).toBe(true);
  return wakeUps;
}

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

describe("afterFreeTime", () => {
  it("in a hidden tab whose timers run once a minute, a 10 s wait ends at the first wake-up", () => {
    vi.stubGlobal("document", { visibilityState: "hidden" });
    expect(wakeUpsUntilExpired(10_000, 60_000)).toBe(1);
    expect(wakeUpsUntilExpired(5_000, 60_000)).toBe(1);
  });

  it("in a hidden tab whose timers run once a second, a 5 s wait ends after 5 s", () => {
    vi.stubGlobal("document", { visibilityState: "hidden" });
    expect(wakeUpsUntilExpired(5_000, 1_000)).toBe(5);
  });

  it("in a visible tab, time its own long tasks held the thread still counts twice a tick at most", () => {
    vi.stubGlobal("document", { visibilityState: "visible" });
    // 10 s: ticks of 500 ms; each fires 60 s late (a long task) and counts 1 s.
    expect(wakeUpsUntilExpired(10_000, 60_000)).toBe(10);
  });

  it("without a document (a worker), as in a visible tab", () => {
    expect(wakeUpsUntilExpired(10_000, 60_000)).toBe(10);
  });
});
