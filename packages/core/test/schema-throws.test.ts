import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemorySnapshotStore,
  type StateSyncError,
} from "@statesync/core";

/**
 * A model's schema runs the model's own code (refinements, transforms): where that code throws on
 * a value from the log (another writer's arguments, a snapshot entry) or from a store, the value
 * fails like one the schema refuses, the same on every replica, and the reading goes on. It
 * stopped the replica at that entry for good ("following the log failed"), and a caller passing
 * such arguments got the model's raw error instead of `VALIDATION`.
 */
const unlucky = (n: number) => {
  if (n === 13) throw new Error("unlucky");
  return true;
};

const counter = defineModel({
  name: "counter",
  state: z.object({ n: z.number().refine(unlucky) }),
  initial: { n: 0 },
  commands: {
    set: {
      args: z.object({ to: z.number().refine(unlucky) }),
      apply(d, { to }) {
        d.n = to;
      },
    },
  },
});

async function open(log: MemoryLog, live = true, snapshots: MemorySnapshotStore | false = false) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log: log.handle(),
    model: counter,
    live,
    snapshots,
    compaction: false,
    onError: (e) => errors.push(e),
  });
  return Object.assign(sync, { errors });
}

const raw = (o: object) => JSON.stringify({ ts: 1, client: "other", ...o });

describe("a schema that throws", () => {
  it("refuses a caller's arguments with VALIDATION, appending nothing", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const before = (await log.info()).latestRevision;
    for (const call of [
      () => a.update("set", { to: 13 }),
      () => a.updateUnconditionally("set", { to: 13 }),
    ]) {
      const refused = await call().catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: "VALIDATION" });
      expect((refused as Error).message).toMatch(/unlucky/);
    }
    expect((await log.info()).latestRevision).toBe(before);
    await a.close();
  });

  it("makes another writer's command a no-op on every replica, and the replicas go on", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    const command = { v: 3, kind: "command", seed: 1, name: "set" };
    log.injectRaw(raw({ ...command, args: { to: 13 } }));
    await a.waitFor(log.injectRaw(raw({ ...command, args: { to: 5 } })));
    const late = await open(log, false);
    for (const r of [a, late]) {
      expect(r.state).toEqual({ n: 5 });
      expect(r.errors.map((e) => e.code)).toEqual(["VALIDATION"]);
    }
    await Promise.all([a.close(), late.close()]);
  });

  it("refuses a snapshot entry whose state makes it throw; the history before it is used", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    await a.update("set", { to: 4 });
    const snapshot = { v: 1, kind: "snapshot", model: "counter", version: 1 };
    await a.waitFor(
      log.injectRaw(
        raw({ ...snapshot, initialHash: counter.initialHash, base: a.revision, state: { n: 13 } }),
      ),
    );
    await a.update("set", { to: 6 });
    const late = await open(log, false);
    for (const r of [a, late]) {
      expect(r.state).toEqual({ n: 6 });
      expect(r.revision).toBe(a.revision);
    }
    expect(late.errors.map((e) => e.code)).toEqual(["CORRUPT_ENTRY"]);
    await Promise.all([a.close(), late.close()]);
  });
});

describe("a record's key schema that throws", () => {
  // The writer's check looked through the record with the key schema's own `safeParse`, which
  // threw: the update was refused as "cannot be kept ... nested too deep?", not by the schema.
  const tags = defineModel({
    name: "tags",
    state: z.object({
      tags: z.record(
        z.string().refine((k) => k !== "13" || unlucky(13)),
        z.number(),
      ),
    }),
    initial: { tags: {} },
    commands: {},
  });

  it("refuses a conditional update as the schema does, naming what threw", async () => {
    const log = new MemoryLog();
    const a = await createSynchronizer({ log, model: tags, compaction: false, snapshots: false });
    const refused = await a
      .update((d) => {
        d.tags["13"] = 1;
      })
      .catch((e: StateSyncError) => e);
    expect(refused).toMatchObject({ code: "VALIDATION" });
    expect((refused as Error).message).toMatch(/the schema threw: Error: unlucky/);
    expect((refused as Error).message).not.toMatch(/nested too deep/);
    await a.update((d) => {
      d.tags["12"] = 1;
    });
    expect(a.state.tags).toEqual({ 12: 1 });
    await a.close();
  });
});
