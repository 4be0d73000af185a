import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemorySnapshotStore,
  stateHash,
  type StateSyncError,
} from "@statesync/core";

/**
 * Arrays with holes (a fresh-eyes trial): an unconditional command growing an array by its
 * length, writing past its end, deleting an element, or emptying it and writing past the end was
 * kept by the writer and a catch-up, which checked along the indices written, while a replica
 * restored from a local snapshot checked the whole state (not JSON: a hole) and made it a no-op.
 * One revision had two states (`[7, <3 empty items>, 1]` and `[7]`), and the writer's could not
 * be hashed, compacted or saved. Every replica must give the whole state's verdict.
 */
const model = defineModel({
  name: "holes",
  state: z.object({
    list: z.array(z.number()),
    objs: z.array(z.object({ a: z.number() })),
    // Its elements may be anything (undefined too): only the JSON check sees a hole here.
    opt: z.array(z.unknown()),
  }),
  initial: { list: [], objs: [{ a: 1 }, { a: 2 }], opt: [] },
  commands: {
    push: {
      args: z.object({ v: z.number() }),
      apply(d, { v }) {
        d.list.push(v);
        d.opt.push(v);
      },
    },
    grow: {
      args: z.object({}),
      apply(d) {
        d.list.length = 3;
      },
    },
    past: {
      args: z.object({}),
      apply(d) {
        d.list[4] = 1;
      },
    },
    del: {
      args: z.object({}),
      apply(d) {
        delete d.list[0];
      },
    },
    refill: {
      args: z.object({}),
      apply(d) {
        d.objs.length = 0;
        d.objs[2] = { a: 3 };
      },
    },
    optGrow: {
      args: z.object({}),
      apply(d) {
        d.opt.length = 3;
      },
    },
  },
});

const open = (log: MemoryLog, extra: Record<string, unknown> = {}) => {
  const errors: StateSyncError[] = [];
  return createSynchronizer({
    log: log.handle(),
    model,
    compaction: false,
    onError: (e: StateSyncError) => errors.push(e),
    ...extra,
  }).then((sync) => Object.assign(sync, { errors }));
};

const failedAt = (errors: StateSyncError[]) =>
  errors.filter((e) => e.code === "COMMAND_FAILED").map((e) => e.details.revision);

describe("checked commands that leave holes in an array", () => {
  it.each(["grow", "past", "del", "refill", "optGrow"] as const)(
    "%s is a no-op on the writer, a catch-up and a restored replica alike",
    async (name) => {
      const log = new MemoryLog();
      const snapshots = new MemorySnapshotStore();
      const writer = await open(log, { snapshots: false });
      await writer.updateUnconditionally("push", { v: 7 });
      const restored = await open(log, { snapshots, snapshotKey: "k" });
      await restored.saveSnapshot();
      await restored.close();
      const bad = await writer.updateUnconditionally(name, {}).catch((e: unknown) => e);
      expect(bad).toMatchObject({ code: "COMMAND_FAILED", details: { reason: "invalid-state" } });
      const at = (bad as StateSyncError).details.revision;
      await writer.updateUnconditionally("push", { v: 8 });
      const again = await open(log, { snapshots, snapshotKey: "k" });
      const fresh = await open(log, { snapshots: false }); // catches up in one batch
      const expected = { list: [7, 8], objs: [{ a: 1 }, { a: 2 }], opt: [7, 8] };
      for (const r of [writer, again, fresh]) {
        await r.synced();
        expect([r.revision, r.state]).toEqual([4, expected]);
        expect(failedAt(r.errors)).toEqual([at]);
        expect(stateHash(r.state)).toBe(stateHash(expected));
      }
      await Promise.all([writer.close(), again.close(), fresh.close()]);
    },
  );
});
