import path from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel } from "@statesync/core";
import { FileSnapshotStore, openSynchronizer } from "@statesync/node";
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

describe("model versions and the local snapshot (FileSnapshotStore, nats-server)", () => {
  it("an older client refused at open keeps the newer client's snapshot; the newer one replays only the tail", async () => {
    const stream = uniqueStream("VERSNAP");
    const snapshotDir = path.join(ctx.dir, stream);
    const base = { servers: ctx.server.url, stream, snapshotKey: "app" };
    const a1 = await openSynchronizer({ ...base, model: counter, snapshots: false });
    await a1.update("increment", { by: 1 });
    const b2 = await openSynchronizer({ ...base, model: counterV2, snapshotDir });
    for (let i = 0; i < 4; i++) await b2.update("increment", { by: 1 });
    await b2.close(); // the version-2 snapshot
    const files = new FileSnapshotStore(snapshotDir);
    const saved = await files.load("app");
    expect(saved).toMatchObject({ modelVersion: 2, revision: b2.revision });
    // A rollback or a stale copy of the version-1 app opens with the same directory and key.
    expect(await codeOf(openSynchronizer({ ...base, model: counter, snapshotDir }))).toBe(
      "MODEL_UPGRADED",
    );
    expect(await files.load("app")).toEqual(saved);
    // Another version-2 writer appends three entries; the version-2 app restores its snapshot and
    // fetches only those.
    const other = await openSynchronizer({ ...base, model: counterV2, snapshots: false });
    for (let i = 0; i < 3; i++) await other.update("increment", { by: 1 });
    const again = await openSynchronizer({ ...base, model: counterV2, snapshotDir });
    expect(again.stats.snapshotsRestored).toBe(1);
    expect(again.stats.entriesFetched).toBe(3);
    expect(again.state).toEqual(other.state);
    await Promise.all([a1, other, again].map((r) => r.close()));
  });
});
