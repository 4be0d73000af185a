import {
  createSynchronizer,
  defineModel,
  encodeEntry,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  type StateSyncError,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";

/**
 * docs/versions.md for queued updates: a queue of an older model version is never dropped in
 * silence. When the log switches under it, its callers reject MODEL_UPGRADED and the records
 * stay stored; the upgraded app reads them as the log reads an old command (`upgradeCommand`),
 * or refuses them with an event (UPDATE_REFUSED, cause OUTDATED_COMMAND).
 */
const v1 = defineModel({
  name: "tags",
  version: 1,
  state: z.object({ ids: z.array(z.string()) }),
  initial: { ids: [] },
  commands: {
    add: { args: z.object({ id: z.string() }), apply: (d, a) => void d.ids.push(a.id) },
    old: { args: z.object({}), apply: () => undefined },
  },
});
const v2 = defineModel({
  name: "tags",
  version: 2,
  state: z.object({ ids: z.array(z.string()), tags: z.array(z.string()) }),
  initial: { ids: [], tags: [] },
  commands: {
    add: {
      args: z.object({ id: z.string() }),
      apply: (d: { ids: string[]; tags: string[] }, a: { id: string }) => void d.ids.push(a.id),
    },
  },
  predecessor: v1,
  migrate: (s: { ids: string[] }) => ({ ...s, tags: [] }),
  upgradeCommand: (c) => (c.name === "add" ? c : undefined),
});

describe("queued updates and model versions", () => {
  it("a switch under an older queue: MODEL_UPGRADED to its callers, records kept, read by the new version", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const pending = pendingQueue({ store, owner: "device" });
    const old = await createSynchronizer({ log, model: v1, pending, compaction: false });
    log.setOffline(true);
    const add = old.update("add", { id: "a" });
    const gone = old.updateUnconditionally("old", {});
    const outcomes = [add, gone].map((p) => p.catch((e: StateSyncError) => e.code));
    await Promise.all([add.queued, gone.queued]);
    // Meanwhile version 2 switched the log (as another app would have, while this one was away).
    log.injectRaw(
      encodeEntry({
        v: 2,
        kind: "switch",
        base: old.revision,
        ts: Date.now(),
        client: "v2-app",
        model: "tags",
        from: 1,
        version: 2,
        initialHash: v2.initialHash,
        state: { ids: [], tags: [] },
      }),
    );
    log.setOffline(false);
    expect(await Promise.all(outcomes)).toEqual(["MODEL_UPGRADED", "MODEL_UPGRADED"]);
    expect(old.status).toBe("stalled");
    expect(old.pendingCount).toBe(2); // kept, never dropped in silence
    await old.close();
    // The old app starts again: it refuses to open (MODEL_UPGRADED), its queue untouched.
    await expect(
      createSynchronizer({ log: log.handle(), model: v1, pending, compaction: false }),
    ).rejects.toMatchObject({ code: "MODEL_UPGRADED" });
    // The upgraded app reads the queue: "add" is upgraded, "old" is refused with an event.
    const upgraded = await createSynchronizer({
      log: log.handle(),
      model: v2,
      pending,
      compaction: false,
    });
    const refused: unknown[] = [];
    upgraded.on("refused", (e, u) =>
      refused.push([e.code, (e.cause as StateSyncError).code, u.command]),
    );
    await upgraded.flush();
    expect(upgraded.state).toEqual({ ids: ["a"], tags: [] });
    expect(refused).toEqual([["UPDATE_REFUSED", "OUTDATED_COMMAND", "old"]]);
    await upgraded.close();
  });

  it("an app rolled back refuses what a newer version queued, with an event", async () => {
    const log = new MemoryLog();
    const store = new MemoryPendingStore();
    const pending = pendingQueue({ store, owner: "device" });
    const first = await createSynchronizer({ log, model: v1, compaction: false });
    await first.close();
    const newer = await createSynchronizer({
      log: log.handle(),
      model: v2,
      pending,
      upgrade: "manual",
      compaction: false,
    });
    log.setOffline(true);
    const queued = newer.update("add", { id: "from-v2" });
    queued.catch(() => undefined);
    await queued.queued;
    await newer.close();
    log.setOffline(false);
    const older = await createSynchronizer({
      log: log.handle(),
      model: v1,
      pending,
      compaction: false,
    });
    const refused: unknown[] = [];
    older.on("refused", (e, u) =>
      refused.push([e.code, (e.cause as StateSyncError).code, u.command]),
    );
    await older.update("add", { id: "from-v1" });
    await older.flush();
    expect(refused).toEqual([["UPDATE_REFUSED", "OUTDATED_COMMAND", "add"]]);
    expect(older.state).toEqual({ ids: ["from-v1"] });
    await older.close();
  });
});

/** The switch entry of version 2 at `base`, as the upgraded app writes it. */
function switchEntry(base: number): Uint8Array {
  return encodeEntry({
    v: 2,
    kind: "switch",
    base,
    ts: Date.now(),
    client: "v2-app",
    model: "tags",
    from: 1,
    version: 2,
    initialHash: v2.initialHash,
    state: { ids: [], tags: [] },
  });
}

describe("an older queue's command stored after the switch", () => {
  // A trial (s10-switch-race): a v1 app's queued command, pushed as the log switched, landed
  // after the switch entry; every v2 replica skips it (OUTDATED_COMMAND), yet the queue counted
  // it committed because it was stored, and dropped its record: the upgraded app never saw it.
  // The record must stay until the replica has applied it (or the upgraded app refuses it).
  for (const withUpgrade of [false, true]) {
    it(`keeps the record until a replica applied it (${withUpgrade ? "upgradeCommand" : "none"})`, async () => {
      const target = withUpgrade ? v2 : { ...v2, upgradeCommand: undefined };
      const log = new MemoryLog();
      const pending = pendingQueue({ store: new MemoryPendingStore(), owner: "device" });
      const base = log.handle();
      // The switch lands just before the old app's first unconditional append.
      let injected = false;
      const racing = new Proxy(base, {
        get(t, key, receiver) {
          if (key === "appendUnconditional" && !injected) {
            return (...args: unknown[]) => {
              injected = true;
              log.injectRaw(switchEntry(1));
              return (t.appendUnconditional as (...a: unknown[]) => unknown).apply(t, args);
            };
          }
          const v: unknown = Reflect.get(t, key, receiver);
          return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(t) : v;
        },
      });
      const old = await createSynchronizer({ log: racing, model: v1, pending, compaction: false });
      expect(old.revision).toBe(1);
      const sent = old.updateUnconditionally("add", { id: "late" });
      await sent.queued;
      expect(await sent.catch((e: StateSyncError) => e.code)).toBe("MODEL_UPGRADED");
      expect(injected).toBe(true);
      await new Promise((r) => setTimeout(r, 50)); // what the push did after the stall
      expect(old.pendingCount).toBe(1); // kept: no replica applied it
      await old.close();
      const upgraded = await createSynchronizer({
        log: log.handle(),
        model: target,
        pending,
        compaction: false,
      });
      const refused: unknown[] = [];
      upgraded.on("refused", (e, u) => refused.push([(e.cause as StateSyncError).code, u.command]));
      await upgraded.flush();
      if (withUpgrade) {
        // Replicas read the stored copy through upgradeCommand: applied once, not re-sent.
        expect(upgraded.state).toEqual({ ids: ["late"], tags: [] });
        expect(refused).toEqual([]);
      } else {
        expect(upgraded.state).toEqual({ ids: [], tags: [] });
        expect(refused).toEqual([["OUTDATED_COMMAND", "add"]]);
      }
      expect(upgraded.pendingCount).toBe(0);
      await upgraded.close();
    });
  }
});

describe('a queue under upgrade: "manual" before upgrade()', () => {
  /** A log written by v1 (`ids` added first), and a v2 replica on it with upgrade "manual". */
  async function manualOnV1(ids: string[] = [], pending?: ReturnType<typeof pendingQueue>) {
    const log = new MemoryLog();
    const first = await createSynchronizer({ log, model: v1, compaction: false });
    for (const id of ids) await first.update("add", { id });
    await first.close();
    const m = await createSynchronizer({
      log: log.handle(),
      model: v2,
      ...(pending ? { pending } : {}),
      upgrade: "manual",
      compaction: false,
    });
    return { log, m };
  }

  // A trial (s8-manual-upgrade-flush): flush() waited for ever with the replica `writable`, no
  // `writeError` and no event, while every push met UPGRADE_PENDING.
  it("says so (not writable, UPGRADE_PENDING) and pushes once the log is switched", async () => {
    const pending = pendingQueue({ store: new MemoryPendingStore(), owner: "device" });
    const { m } = await manualOnV1(["old"], pending);
    const changes: unknown[] = [];
    m.on("writable", (w, e) => changes.push([w, e?.code]));
    expect(m.writable).toBe(false);
    expect(m.writeError?.code).toBe("UPGRADE_PENDING");
    const added = m.update("add", { id: "new" });
    await added.queued;
    expect(m.pendingCount).toBe(1);
    expect(m.optimisticState).toEqual({ ids: ["old", "new"], tags: [] });
    await m.upgrade();
    await added;
    await m.flush();
    expect(m.state).toEqual({ ids: ["old", "new"], tags: [] });
    expect(m.writable).toBe(true);
    expect(changes[0]).toEqual([true, undefined]);
    await m.close();
  });

  it("stays not writable across a reconnection that reads nothing new", async () => {
    // A review: the reconnection's `reconnected()` made it writable with no writeError.
    const { log, m } = await manualOnV1();
    log.setOffline(true);
    log.setOffline(false);
    await m.synced();
    await new Promise((r) => setTimeout(r, 50));
    expect(m.status).toBe("live");
    expect([m.writable, m.writeError?.code]).toEqual([false, "UPGRADE_PENDING"]);
    await m.close();
  });

  it("is writable again once another replica switched the log", async () => {
    const { log, m } = await manualOnV1();
    expect(m.writeError?.code).toBe("UPGRADE_PENDING");
    const other = await createSynchronizer({ log: log.handle(), model: v2, compaction: false });
    await m.waitFor(other.revision);
    expect(m.writable).toBe(true);
    await m.update("add", { id: "x" });
    await Promise.all([m.close(), other.close()]);
  });
});
