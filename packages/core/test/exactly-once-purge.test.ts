import { afterEach, describe, expect, it, vi } from "vitest";
import { MemoryLog, StateSyncError, type RevisionedLog } from "@statesync/core";
import { codeOf, open } from "./fixtures.js";

/**
 * Issue 10, case 2: an append is stored but its acknowledgement is lost and its writer cut off;
 * meanwhile another client compacts (the entry's position is truncated) and the server restarts
 * (it rebuilds its duplicate table only from the messages it still holds: `forgetMessageIds`).
 * The writer's re-send must be recognised as the original commit: applied once, by every replica,
 * whatever the writer's and the compactor's clocks say.
 */

/** A handle on `log` that loses the acknowledgement of its next append and then stays cut off
 * (every call waits) until `reconnect()`. */
function cutOffAfterNextAppend(log: MemoryLog) {
  const handle = log.handle();
  let cut = false;
  let reconnect!: () => void;
  const back = new Promise<void>((resolve) => (reconnect = resolve));
  let stored!: () => void;
  const lost = new Promise<void>((resolve) => (stored = resolve));
  const waiting = new Set(["info", "entryAt", "findByMessageId", "truncateBefore"]);
  const proxied = new Proxy(handle, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== "function") return value;
      const call = (args: unknown[]) => (value as (...a: unknown[]) => unknown).apply(target, args);
      if (prop === "read") {
        return async function* (...args: unknown[]) {
          if (cut) await back;
          yield* call(args) as AsyncIterable<unknown>;
        };
      }
      if (prop === "appendUnconditional" || prop === "appendConditional") {
        return async (...args: unknown[]) => {
          if (cut) await back;
          const result = await call(args);
          if (cut) return result;
          cut = true;
          stored();
          throw new StateSyncError("UNAVAILABLE", "connection lost before the acknowledgement");
        };
      }
      if (!waiting.has(String(prop))) return value.bind(target);
      return async (...args: unknown[]) => {
        if (cut) await back;
        return call(args);
      };
    },
  }) as RevisionedLog;
  return { log: proxied, lost, reconnect };
}

afterEach(() => vi.restoreAllMocks());

/** Entries a snapshot entry's record of message ids names at most (`MAX_RECENT` in entry.ts). */
const MAX_RECENT = 4_000;

/** Runs `fn` with `Date.now()` `ms` ahead (the compactor's clock, far from the writer's). */
async function withClockAhead<T>(ms: number, fn: () => Promise<T>): Promise<T> {
  const real = Date.now.bind(Date);
  const spy = vi.spyOn(Date, "now").mockImplementation(() => real() + ms);
  try {
    return await fn();
  } finally {
    spy.mockRestore();
  }
}

describe("exactly once after a purge and a server restart (MemoryLog)", () => {
  for (const kind of ["unconditional", "conditional"] as const) {
    it(`${kind}: the re-send is recognised as the original commit, whatever the clocks`, async () => {
      const log = new MemoryLog();
      const b = await open(log, { clientId: "b", compaction: false });
      const cut = cutOffAfterNextAppend(log);
      const a = await open(cut.log, { clientId: "a", compaction: false, live: false });
      // The clock below is this process's: a's deadline must outlast its jump, or a's re-sends
      // end there (`UNKNOWN_OUTCOME`, in 2 of 5 runs once look-ups ended at the deadline).
      const limits = { outcomeTimeoutMs: 60 * 60_000 };
      const pending =
        kind === "unconditional"
          ? a.updateUnconditionally("increment", { by: 1 }, limits)
          : a.update("increment", { by: 1 }, limits);
      await cut.lost; // stored at revision 2, its acknowledgement lost, a cut off
      await b.waitFor(2);
      await b.update("increment", { by: 10 });
      // The compactor's clock is 11 minutes ahead of the writer's.
      await withClockAhead(11 * 60_000, () => b.compact());
      log.forgetMessageIds(); // the server restarts: it forgot the purged entry's id
      cut.reconnect();
      const result = await pending;
      expect(result.revision).toBe(2);
      await a.fetchUpdates();
      await b.update("increment", { by: 100 });
      await a.fetchUpdates();
      expect(b.state.count).toBe(111);
      expect(a.state).toEqual(b.state);
      await Promise.all([a.close(), b.close()]);
    });
  }

  for (const kind of ["unconditional", "conditional"] as const) {
    it(`${kind}: recognised after a chunked compaction too (part 0 carries the record)`, async () => {
      const log = new MemoryLog({ maxEntryBytes: 4096 });
      const b = await open(log, { clientId: "b", compaction: false });
      for (let i = 0; i < 20; i++) await b.update((d) => void d.items.push("x".repeat(500)));
      const cut = cutOffAfterNextAppend(log);
      const a = await open(cut.log, { clientId: "a", compaction: false, live: false });
      const before = a.revision;
      const pending =
        kind === "unconditional"
          ? a.updateUnconditionally("increment", { by: 1 })
          : a.update("increment", { by: 1 });
      await cut.lost;
      await b.waitFor(before + 1);
      await b.update("increment", { by: 10 });
      await b.compact();
      expect((await log.info()).firstRevision).toBeGreaterThan(before + 1); // a's entry is gone
      log.forgetMessageIds();
      cut.reconnect();
      const result = await pending;
      expect(result.revision).toBe(before + 1);
      await a.fetchUpdates();
      expect(b.state.count).toBe(11);
      expect(a.state).toEqual(b.state);
      await Promise.all([a.close(), b.close()]);
    });
  }

  it("unconditional: when no record reaches back to the first send, UNKNOWN_OUTCOME and nothing stored twice", async () => {
    const log = new MemoryLog();
    const b = await open(log, { clientId: "b", compaction: false, live: false });
    const cut = cutOffAfterNextAppend(log);
    const a = await open(cut.log, { clientId: "a", compaction: false, live: false });
    const pending = a.updateUnconditionally("increment", { by: 1 });
    await cut.lost;
    const increment = JSON.stringify({
      ...{ v: 1, kind: "command", ts: 1, seed: 1, client: "x" },
      ...{ name: "increment", args: { by: 10 } },
    });
    for (let i = 0; i < MAX_RECENT + 1; i++) log.injectRaw(increment);
    await b.fetchUpdates();
    await b.compact(); // the snapshot entry's record no longer reaches back to a's entry
    log.forgetMessageIds();
    cut.reconnect();
    expect(await codeOf(pending)).toBe("UNKNOWN_OUTCOME");
    await b.fetchUpdates();
    expect(b.state.count).toBe(1 + 10 * (MAX_RECENT + 1)); // a's command counted once
    await Promise.all([a.close(), b.close()]);
  });
});
