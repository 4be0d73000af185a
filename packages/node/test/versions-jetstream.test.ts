import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { openSynchronizer } from "@statesync/node";
import { codeOf, uniqueStream, useNatsServer } from "./helpers.js";
import { counter } from "./support/models.js";

/**
 * Issue 11 on a real nats-server (both servers of the matrix), in both layouts: version 2 of a
 * model switches the log once, even when several v2 replicas open at the same moment; v1
 * replicas stop at the switch with MODEL_UPGRADED; a late v2 replica starts from the switch
 * entry; an old command written after the switch is skipped alike.
 */
const counterV2 = defineModel({
  name: "counter",
  version: 2,
  state: z.object({ count: z.number().int(), seen: z.array(z.string()), total: z.number().int() }),
  initial: { count: 0, seen: [], total: 0 },
  commands: {
    increment: {
      args: z.object({ by: z.number().int() }),
      apply(draft, args) {
        draft.count += args.by;
        draft.total += args.by;
      },
    },
  },
  predecessor: counter,
  migrate: (s: typeof counter.initial) => ({ ...s, total: s.count }),
});

const ctx = useNatsServer();
const layouts = [
  { name: "own stream", options: (s: string) => ({ stream: s }) },
  { name: "shared stream", options: (s: string) => ({ stream: "SHARED_V", key: `t.${s}` }) },
];

for (const layout of layouts) {
  describe(`model versions on nats-server, ${layout.name}`, () => {
    it("v2 replicas switch the log once; v1 stops with MODEL_UPGRADED; everyone agrees", async () => {
      const target = layout.options(uniqueStream("VER"));
      const base = { servers: ctx.server.url, snapshots: false as const, ...target };
      const open = (extra = {}) => openSynchronizer({ ...base, model: counter, ...extra });
      const open2 = (extra = {}) => openSynchronizer({ ...base, model: counterV2, ...extra });
      const a1 = await open({ clientId: "a1" });
      const old = await open({ clientId: "old", live: false });
      await a1.update("increment", { by: 5 });
      const v2s = await Promise.all([0, 1, 2].map((i) => open2({ clientId: `b${i}` })));
      const history = await v2s[0]!.history();
      expect(history.filter((h) => h.kind === "switch")).toHaveLength(1);
      const switchAt = history.find((h) => h.kind === "switch")!.revision;
      await v2s[1]!.update("increment", { by: 1 });
      // A v1 writer that had not read the switch appends blindly: skipped by every v2 replica.
      await old.updateUnconditionally("increment", { by: 100 });
      const late = await open2({ clientId: "late" });
      for (const r of v2s) await r.waitFor(late.revision);
      for (const r of [...v2s, late]) expect(r.state).toEqual({ count: 6, seen: [], total: 6 });
      expect(await codeOf(a1.waitFor(switchAt))).toBe("MODEL_UPGRADED");
      expect(a1.status).toBe("stalled");
      expect(a1.state).toEqual({ count: 5, seen: [] });
      expect(await codeOf(open())).toBe("MODEL_UPGRADED");
      await Promise.all([a1, old].map((r) => r.close()));
      await Promise.all([late, ...v2s].map((r) => r.close()));
    });
  });
}
