import { describe, expect, it } from "vitest";
import { MemoryLog, MemorySnapshotStore } from "@statesync/core";
import { open } from "./fixtures.js";

/**
 * A snapshot the check refuses is deleted from the store (bounded, but a disk can take its
 * time). While it was, the replica counted as standing on the log with the refused snapshot's
 * state still in place: a `synced()` or `fetchUpdates()` in that window read the new log's
 * entries on top of the old log's state (a state no log ever held, shown `live`), or stalled it
 * `TRUNCATED` for good on a complete log (a fresh-eyes trial, stop 30, 2 of 5 runs with a 4.8 MB
 * state on a real server). The refused state is now gone before anything can read on top of it.
 */
describe("a refused snapshot is never read on top of", () => {
  it("while its deletion is slow, fetchUpdates() calls see only the new log's states", async () => {
    const store = new MemorySnapshotStore();
    const log = new MemoryLog();
    const a = await open(log, { snapshots: store });
    for (const item of ["old-a", "old-b", "old-c"]) await a.update("push", { item });
    await a.close(); // items old-a..c at revision 4, saved
    log.recreate();
    const w = await open(log);
    for (let i = 1; i <= 5; i++) await w.update("push", { item: `new-${i}` }); // revision 6
    const slowDelete = Object.assign(Object.create(store) as MemorySnapshotStore, {
      delete: async (key: string) => {
        await new Promise((r) => setTimeout(r, 300));
        return store.delete(key);
      },
    });
    log.setOffline(true);
    const b = await open(log, { snapshots: slowDelete });
    const refused = b.state.items.join();
    expect(refused).toBe("old-a@1,old-b@2,old-c@3");
    const seen = new Set<string>();
    b.subscribe((state) => seen.add(state.items.join()));
    const outcomes: string[] = [];
    // A call every 5 ms, each on its own (as an app polling `synced()` would): some land while
    // the refused snapshot is being deleted.
    const calls: Promise<unknown>[] = [];
    const poll = setInterval(() => {
      calls.push(
        b.fetchUpdates().then(
          () => seen.add(b.state.items.join()),
          (e: { code?: string }) => outcomes.push(String(e.code)),
        ),
      );
    }, 5);
    log.setOffline(false);
    expect(await b.synced()).toBe(6);
    await new Promise((r) => setTimeout(r, 400)); // past the deletion
    clearInterval(poll);
    await Promise.all(calls);
    expect(b.status).toBe("live");
    expect(b.state.items.join()).toBe(w.state.items.join());
    // Every state shown is the refused snapshot's, the initial one (the replica reset) or one of
    // the new log's: never old items with new ones after them.
    for (const items of seen) {
      expect([refused, ""]).toContain(items.startsWith("old") ? items : "");
    }
    expect(outcomes.filter((c) => c !== "UNAVAILABLE")).toEqual([]);
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    await b.close();
    await w.close();
  });
});
