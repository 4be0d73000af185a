import { describe, expect, it } from "vitest";
// The engine's own classes throughout (src, not dist), so that `instanceof StateSyncError` holds.
import type { Entry } from "../src/entry.js";
import { MemoryLog } from "../src/memory-log.js";
import { appenderOn, incCommand } from "./engine-fixtures.js";

describe("Appender (exactly-once appends) on MemoryLog", () => {
  it("finds an unconditional append whose acknowledgement was lost before re-sending it", async () => {
    const log = new MemoryLog();
    const { a, s } = appenderOn(log);
    log.loseNextAcks(2);
    const p = await a.prepare(incCommand(1), "the command");
    const stored = await a.appendUnconditional(p, { timeoutMs: 5_000 });
    expect(stored.revision).toBe(1);
    expect(log.size).toBe(1);
    expect(s.resends).toBe(1); // decided once; the look-up found it, so nothing was re-sent
    expect(s.appends).toBe(1);
  });

  it("re-sends an unconditional append not in the log conditionally on the tail it checked", async () => {
    const log = new MemoryLog();
    const { a } = appenderOn(log);
    log.failNextAppends(1); // no answer: as far as the appender knows it may have landed
    const p = await a.prepare(incCommand(1), "the command");
    const pending = a.appendUnconditional(p, { timeoutMs: 5_000 });
    log.injectRaw("other writer"); // lands while the appender waits to re-send
    const stored = await pending;
    expect(stored.revision).toBe(2);
    expect(log.size).toBe(2);
  });

  it("finds its conditional append after a lost acknowledgement, when the server no longer deduplicates", async () => {
    const log = new MemoryLog({ duplicateCheck: "expected-first" });
    const { a } = appenderOn(log);
    log.loseNextAcks(1);
    const p = await a.prepare(incCommand(1), "the command");
    const outcome = await a.appendConditional(p, 0, { timeoutMs: 5_000 });
    expect(outcome).toMatchObject({ kind: "committed", entry: { revision: 1 } });
    expect(log.size).toBe(1);
  });

  it("answers a conflict as a value and counts it", async () => {
    const log = new MemoryLog();
    log.injectRaw("x");
    const { a, s } = appenderOn(log);
    const outcome = await a.appendConditional(await a.prepare(incCommand(1), "c"), 0, {
      timeoutMs: 1_000,
    });
    expect(outcome).toEqual({ kind: "conflict", latest: 1 });
    expect(s.conflicts).toBe(1);
    expect(s.attempts).toBe(1);
  });

  it("says UNKNOWN_OUTCOME only when an attempt may be stored, the original error when none was sent", async () => {
    const log = new MemoryLog();
    const { a } = appenderOn(log);
    const p = await a.prepare(incCommand(1), "c");
    log.setOffline(true); // nothing can be sent
    await expect(a.appendUnconditional(p, { timeoutMs: 120 })).rejects.toMatchObject({
      code: "UNAVAILABLE",
    });
    log.setOffline(false);
    log.failNextAppends(50); // never answered: each may be stored, as far as the appender knows
    await expect(a.appendUnconditional(p, { timeoutMs: 120 })).rejects.toMatchObject({
      code: "UNKNOWN_OUTCOME",
    });
    expect(log.size).toBe(0);
  });

  it("refuses an entry no reader would accept before sending it", async () => {
    const log = new MemoryLog();
    const { a } = appenderOn(log);
    const bad: Entry = { ...(incCommand(1) as Extract<Entry, { kind: "command" }>), ts: -1 };
    await expect(a.prepare(bad, "the command")).rejects.toMatchObject({ code: "VALIDATION" });
    await expect(a.prepare(incCommand(1), "x")).resolves.toBeDefined();
    const small = new MemoryLog({ maxEntryBytes: 10 });
    await expect(appenderOn(small).a.prepare(incCommand(1), "x")).rejects.toMatchObject({
      code: "PAYLOAD_TOO_LARGE",
      // It names the settings and what to do (a new user read only the two sizes).
      message: expect.stringMatching(/max_payload: make the update smaller, or raise them/),
    });
  });
});
