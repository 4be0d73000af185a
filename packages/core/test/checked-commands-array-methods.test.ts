import { enableArrayMethods } from "immer";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemorySnapshotStore,
  type StateSyncError,
} from "@statesync/core";

// Immer's plugins are global: an application that turns this one on turns it on for statesync's
// Immer too. A draft's `push`, `splice`, `filter`, `find`... then work on the draft itself.
enableArrayMethods();

/**
 * With Immer's `enableArrayMethods`, the writes of an array's methods in a checked command went
 * unrecorded (and `find` handed out a draft without a view), so the check along the command's
 * writes kept a push of -1 into a list of non-negative numbers, which a replica restored from a
 * local snapshot (the whole check) refused: one revision, two states.
 */
const model = defineModel({
  name: "array-methods",
  state: z.object({
    list: z.array(z.number().nonnegative()),
    rows: z.array(z.object({ a: z.number().nonnegative() })),
  }),
  initial: { list: [7], rows: [{ a: 1 }, { a: 2 }] },
  commands: {
    push: {
      args: z.object({ v: z.number() }),
      apply(d, { v }) {
        d.list.push(v);
      },
    },
    splice: {
      args: z.object({ v: z.number() }),
      apply(d, { v }) {
        d.list.splice(0, 1, v);
      },
    },
    find: {
      args: z.object({ v: z.number() }),
      apply(d, { v }) {
        d.rows.find((_, i) => i === 1)!.a = v;
      },
    },
    filter: {
      args: z.object({ v: z.number() }),
      apply(d, { v }) {
        for (const r of d.rows.filter((_, i) => i === 0)) r.a = v;
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

describe("checked commands using array methods, with Immer's enableArrayMethods on", () => {
  it.each(["push", "splice", "find", "filter"] as const)(
    "%s making the state invalid is a no-op on the writer, a catch-up and a restored replica alike",
    async (name) => {
      const log = new MemoryLog();
      const snapshots = new MemorySnapshotStore();
      const writer = await open(log, { snapshots: false });
      await writer.updateUnconditionally(name, { v: 3 }); // valid: kept everywhere
      const restored = await open(log, { snapshots, snapshotKey: "k" });
      await restored.saveSnapshot();
      await restored.close();
      const bad = await writer.updateUnconditionally(name, { v: -1 }).catch((e: unknown) => e);
      expect(bad).toMatchObject({ code: "COMMAND_FAILED", details: { reason: "invalid-state" } });
      const again = await open(log, { snapshots, snapshotKey: "k" });
      const fresh = await open(log, { snapshots: false });
      const expected = structuredClone(writer.state);
      for (const r of [writer, again, fresh]) {
        await r.synced();
        expect([r.revision, r.state]).toEqual([3, expected]);
        expect(r.errors.map((e) => e.code)).toEqual(["COMMAND_FAILED"]);
      }
      expect(expected).not.toEqual(model.initial);
      await Promise.all([writer.close(), again.close(), fresh.close()]);
    },
  );

  it("a conditional update sharing a draft with others is checked along its array methods too", async () => {
    const log = new MemoryLog();
    const writer = await open(log, { snapshots: false });
    // Sent together, these run in one draft, each checked along what it wrote.
    const outcomes = await Promise.allSettled([
      writer.update((d) => {
        d.list.push(1);
      }),
      writer.update((d) => {
        d.list.push(-1);
      }),
      writer.update((d) => {
        d.rows.find((_, i) => i === 0)!.a = -1;
      }),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected"]);
    expect(writer.state).toEqual({ list: [7, 1], rows: [{ a: 1 }, { a: 2 }] });
    await writer.close();
  });
});
