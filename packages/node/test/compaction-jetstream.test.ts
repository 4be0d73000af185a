import path from "node:path";
import { connect } from "nats";
import { describe, expect, it } from "vitest";
import { openSynchronizer, stateHash } from "@statesync/node";
import { codeOf, uniqueStream, useNatsServer } from "./helpers.js";
import { counter } from "./support/models.js";

const ctx = useNatsServer();
const fresh = (p: string) => uniqueStream(p);

const layouts = [
  { name: "own stream", where: (s: string) => ({ stream: s }) },
  { name: "shared stream", where: (s: string) => ({ stream: "SHARED_COMPACT", key: `t.${s}` }) },
];

for (const layout of layouts) {
  describe(`compaction on nats-server, ${layout.name}`, () => {
    it("truncates the history; fresh and returning clients start from the snapshot entry", async () => {
      const where = layout.where(fresh("CMP"));
      const snapshotDir = path.join(ctx.dir, fresh("snap"));
      const base = {
        servers: ctx.server.url,
        model: counter,
        compaction: false as const,
        ...where,
      };
      const writer = await openSynchronizer({ ...base, snapshots: false });
      const away = await openSynchronizer({ ...base, snapshotDir });
      for (let i = 0; i < 10; i++) await writer.update("increment", { by: 1 });
      await away.waitFor(writer.revision);
      await away.close(); // its snapshot is at the 11th entry
      for (let i = 0; i < 10; i++) await writer.update("increment", { by: 1 });
      const { revision } = await writer.compact();
      await writer.update("increment", { by: 1 });

      const history = await writer.history();
      expect(history[0]).toMatchObject({ revision, kind: "snapshot" });
      expect(history).toHaveLength(2);

      const joiner = await openSynchronizer({ ...base, snapshots: false });
      expect(joiner.stats.entriesFetched).toBe(2);
      expect(joiner.state.count).toBe(21);

      const back = await openSynchronizer({ ...base, snapshotDir });
      expect(back.stats.snapshotsRestored).toBe(1);
      expect(back.stats.entriesFetched).toBe(2);
      expect(back.state.count).toBe(21);
      expect(new Set([writer, joiner, back].map((c) => stateHash(c.state))).size).toBe(1);
      await Promise.all([writer.close(), joiner.close(), back.close()]);
    });

    it("keeps live followers converging through concurrent compactions and updates", async () => {
      const where = layout.where(fresh("CMP2"));
      const base = { servers: ctx.server.url, model: counter, snapshots: false as const, ...where };
      const clients = await Promise.all(
        [0, 1, 2].map(() => openSynchronizer({ ...base, compaction: { everyEntries: 15 } })),
      );
      await Promise.all(
        clients.flatMap((c, i) => [
          ...Array.from({ length: 20 }, () => c.update("increment", { by: 1 })),
          ...Array.from({ length: 10 }, (_, j) =>
            c.updateUnconditionally("record", { id: `${i}-${j}` }),
          ),
          c.compact(),
        ]),
      );
      await Promise.all(clients.map((c) => c.synced()));
      const latest = Math.max(...clients.map((c) => c.revision));
      await Promise.all(clients.map((c) => c.waitFor(latest)));
      for (const c of clients) {
        expect(c.state.count).toBe(60);
        expect(c.state.seen).toHaveLength(30);
      }
      const fresh1 = await openSynchronizer(base);
      expect(fresh1.state.count).toBe(60);
      expect(new Set([...clients, fresh1].map((c) => stateHash(c.state))).size).toBe(1);
      expect(clients.reduce((s, c) => s + c.stats.compactions, 0)).toBeGreaterThanOrEqual(1);
      await Promise.all([...clients, fresh1].map((c) => c.close()));
    });
  });
}

describe("truncation without a snapshot entry", () => {
  it("fails with TRUNCATED instead of guessing", async () => {
    const stream = fresh("PURGED");
    const a = await openSynchronizer({
      servers: ctx.server.url,
      stream,
      model: counter,
      snapshots: false,
    });
    for (let i = 0; i < 3; i++) await a.update("increment", { by: 1 });
    await a.close();
    const nc = await connect({ servers: ctx.server.url });
    // Its last update stays: the log holds entries, none a replica can start from. (A stream
    // purged whole starts again from the initial state instead: faults/purge-shapes.test.ts.)
    await (await nc.jetstreamManager()).streams.purge(stream, { keep: 1 });
    await nc.close();
    expect(
      await codeOf(
        openSynchronizer({ servers: ctx.server.url, stream, model: counter, snapshots: false }),
      ),
    ).toBe("TRUNCATED");
  });
});
