import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel, type StateSyncError } from "@statesync/core";
import { openSynchronizer } from "@statesync/node";
import { uniqueStream, useNatsServer } from "./helpers.js";

/**
 * Checked unconditional commands on a real nats-server, in both layouts: a command whose result
 * would break the schema is a `COMMAND_FAILED` no-op on a live replica and on one catching up,
 * its caller learns it, and compaction of the (valid) state goes through.
 */
const stock = defineModel({
  name: "stock",
  state: z.object({ qty: z.number().nonnegative() }),
  initial: { qty: 0 },
  commands: {
    add: {
      args: z.object({ n: z.number().int() }),
      apply(d, { n }) {
        d.qty += n;
      },
    },
    take: {
      args: z.object({ n: z.number().int() }),
      apply(d, { n }) {
        d.qty -= n;
      },
    },
  },
});

const ctx = useNatsServer();
const layouts = [
  { name: "own stream", options: (s: string) => ({ stream: s }) },
  { name: "shared stream", options: (s: string) => ({ stream: "SHARED_STOCK", key: `t.${s}` }) },
];

for (const layout of layouts) {
  describe(`checked commands on nats-server, ${layout.name}`, () => {
    it("a take past zero is a no-op on a live and a catching-up replica; compaction succeeds", async () => {
      const target = layout.options(uniqueStream("CHK"));
      const open = (live: boolean, errors: StateSyncError[]) =>
        openSynchronizer({
          servers: ctx.server.url,
          model: stock,
          snapshots: false,
          compaction: false,
          live,
          onError: (e) => errors.push(e),
          ...target,
        });
      const liveErrors: StateSyncError[] = [];
      const live = await open(true, liveErrors);
      await live.updateUnconditionally("add", { n: 1 });
      const taken = await live.updateUnconditionally("take", { n: 5 }).catch((e: unknown) => e);
      expect(taken).toMatchObject({
        code: "COMMAND_FAILED",
        details: { command: "take", reason: "invalid-state", committed: true },
      });
      const bad = (taken as StateSyncError).details.revision;
      await live.updateUnconditionally("add", { n: 4 });
      await live.updateUnconditionally("take", { n: 4 });
      const lateErrors: StateSyncError[] = [];
      const late = await open(false, lateErrors);
      try {
        expect(late.revision).toBe(live.revision);
        for (const r of [live, late]) expect(r.state.qty).toBe(1);
        for (const errors of [liveErrors, lateErrors]) {
          const failed = errors.filter((e) => e.code === "COMMAND_FAILED");
          expect(failed.map((e) => e.details.revision)).toEqual([bad]);
        }
        await live.compact();
        const fresh = await open(false, []);
        expect(fresh.state.qty).toBe(1);
        await fresh.close();
      } finally {
        await Promise.all([live.close(), late.close()]);
      }
    });
  });
}
