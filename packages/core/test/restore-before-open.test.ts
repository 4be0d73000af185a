import { describe, expect, it } from "vitest";
import { MemoryLog, MemorySnapshotStore, type SnapshotRecord } from "@statesync/core";
import { open, until } from "./fixtures.js";

/**
 * The log may come online while the local snapshot is still being read (a slow disk, a busy
 * IndexedDB): its "online" event schedules an opening. That opening must not check the snapshot
 * before the snapshot is there. Before, it ran on a replica with no snapshot yet (nothing to
 * check), then the restore put the snapshot in place unchecked: the replica kept another log's
 * state and no CORRUPT_SNAPSHOT was reported (CI, 2.10: the `snapshotKey` of two streams test).
 */
describe("a log that comes online while the snapshot is read", () => {
  it("opens only after the restore, so the snapshot is checked", async () => {
    const other = new MemoryLog();
    const store = new MemorySnapshotStore();
    const a = await open(other, { snapshots: store });
    await a.update("increment", { by: 5 });
    await a.close();
    expect((await store.load("counter"))?.state).toMatchObject({ count: 5 });

    // A store whose load answers only when told to.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = Object.assign(Object.create(store) as MemorySnapshotStore, {
      load: async (key: string): Promise<SnapshotRecord | undefined> => {
        await gate;
        return store.load(key);
      },
    });
    const log = new MemoryLog();
    const w = await open(log);
    await w.update("increment", { by: 2 });
    // B's handle on the log: its reads wait until told to, so that an opening stays in flight.
    let reads!: () => void;
    const readGate = new Promise<void>((r) => (reads = r));
    const handle = Object.assign(Object.create(log) as MemoryLog, {
      read: async function* (from: number, to: number) {
        await readGate;
        yield* log.read(from, to);
      },
    });
    log.setOffline(true);
    const opening = open(handle, { snapshots: slow });
    await new Promise((r) => setTimeout(r, 10));
    log.setOffline(false); // the log's "online" schedules an opening within 100 ms
    await new Promise((r) => setTimeout(r, 250));
    release(); // the snapshot is restored while that opening may be reading
    await new Promise((r) => setTimeout(r, 20));
    reads();
    const b = await opening;
    await until(() => b.status === "live");
    expect(b.state.count).toBe(2); // this log's state, not the other log's 5
    expect(b.errors.map((e) => e.code)).toContain("CORRUPT_SNAPSHOT");
    expect(b.errors.find((e) => e.code === "CORRUPT_SNAPSHOT")?.message).toMatch(
      /written for another log|recreated/,
    );
    await b.close();
    await w.close();
  });
});
