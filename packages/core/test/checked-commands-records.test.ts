import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createSynchronizer, defineModel, MemoryLog, MemorySnapshotStore } from "@statesync/core";

/**
 * A record keyed by an enum needs every key (zod 4). A fresh-eyes trial deleted one with an
 * unconditional command: the writer and a fresh catch-up checked along the changed path, let it
 * pass and kept an invalid state, while a replica restored from a local snapshot checked the whole
 * state and made it a no-op, so one revision had two states. Every replica must give the whole
 * schema's verdict: a no-op (`COMMAND_FAILED`) everywhere, and a conditional delete refused.
 */
const model = defineModel({
  name: "enum-record",
  state: z.object({ m: z.record(z.enum(["a", "b"]), z.number()) }),
  initial: { m: { a: 1, b: 2 } },
  commands: {
    set: {
      args: z.object({ k: z.enum(["a", "b"]), v: z.number() }),
      apply(d, { k, v }) {
        d.m[k] = v;
      },
    },
    del: {
      args: z.object({ k: z.enum(["a", "b"]) }),
      apply(d, { k }) {
        delete d.m[k];
      },
    },
  },
});

const open = (log: MemoryLog, extra: Record<string, unknown> = {}) =>
  createSynchronizer({ log: log.handle(), model, compaction: false, ...extra });

describe("checked commands on a record keyed by an enum", () => {
  it("a command deleting a key is a no-op on the writer, a catch-up and a restored replica alike", async () => {
    const log = new MemoryLog();
    const snapshots = new MemorySnapshotStore();
    const writer = await open(log, { snapshots: false });
    await writer.updateUnconditionally("set", { k: "a", v: 5 });
    const restored = await open(log, { snapshots, snapshotKey: "k" });
    await restored.saveSnapshot();
    await restored.close();
    await expect(writer.updateUnconditionally("del", { k: "b" })).rejects.toMatchObject({
      code: "COMMAND_FAILED",
    });
    await expect(
      writer.update((d) => {
        delete (d.m as Partial<Record<"a" | "b", number>>).a;
      }),
    ).rejects.toMatchObject({ code: "VALIDATION" });
    await writer.updateUnconditionally("set", { k: "b", v: 7 });
    const again = await open(log, { snapshots, snapshotKey: "k" });
    const fresh = await open(log, { snapshots: false });
    for (const r of [writer, again, fresh]) {
      await r.synced();
      expect([r.revision, r.state]).toEqual([4, { m: { a: 5, b: 7 } }]);
    }
    await Promise.all([writer.close(), again.close(), fresh.close()]);
  });
});
