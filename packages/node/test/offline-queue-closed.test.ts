import { readdir } from "node:fs/promises";
import path from "node:path";
import {
  defineModel,
  FilePendingStore,
  jetStreamSnapshotKey,
  openSynchronizer,
} from "@statesync/node";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { codeOf, uniqueStream, until, useNatsServer } from "./helpers.js";
import { TcpProxy } from "./support/tcp-proxy.js";

/**
 * The pending API of a closed replica, with the queue on disk (docs/offline.md, "Control"). A
 * fresh-eyes trial: after `close()`, `discard(id)` resolved true, `clearPending()` to 2 with a
 * `"drained"` event, and `flush()` resolved, while every `*.pending.json` stayed on disk and the
 * next replica pushed them. Now they reject `CLOSED`; a logout after `close()` clears the queue
 * through its store.
 */
const ctx = useNatsServer();

const board = defineModel({
  name: "board",
  state: z.object({ cards: z.array(z.string()) }),
  initial: { cards: [] },
  commands: {
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
  },
});

/** The pending record files in the snapshot directory. */
async function recordFiles(snapshotDir: string): Promise<string[]> {
  const files = await readdir(snapshotDir, { recursive: true });
  return files.filter((f) => f.endsWith(".pending.json"));
}

describe("the pending API of a closed replica, on disk", () => {
  it("discard, clearPending and flush reject CLOSED and delete no file; the next replica pushes them, and the store clears a queue nobody holds", async () => {
    const stream = uniqueStream("QCLOSED");
    const snapshotDir = path.join(ctx.dir, stream);
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    const open = () =>
      openSynchronizer({
        servers: proxy.url,
        connectOptions: { reconnectTimeWait: 100 },
        stream,
        model: board,
        snapshotDir,
        pending: { owner: "laptop" },
        onError: () => undefined,
      });
    const queueOffline = async (cards: string[]) => {
      const a = await open();
      proxy.setRefusing(true);
      proxy.cutAll();
      await until(() => (a.status === "offline" ? true : undefined));
      const queued = cards.map((card) => a.update("add", { card }));
      for (const p of queued) p.catch(() => undefined);
      const ids = (await Promise.all(queued.map((p) => p.queued))).map((q) => q.id!);
      await a.close();
      return { a, ids };
    };

    const { a, ids } = await queueOffline(["q1", "q2", "q3"]);
    let drained = 0;
    a.on("drained", () => (drained += 1));
    expect(await recordFiles(snapshotDir)).toHaveLength(3);
    const b = await open(); // takes the queue over, still offline
    expect(b.pendingCount).toBe(3);
    expect(await codeOf(a.discard(ids[0]!))).toBe("CLOSED");
    expect(await codeOf(a.clearPending())).toBe("CLOSED");
    expect(await codeOf(a.flush())).toBe("CLOSED");
    expect(drained).toBe(0);
    expect(await recordFiles(snapshotDir)).toHaveLength(3);
    expect(b.pendingCount).toBe(3);
    proxy.setRefusing(false);
    await b.flush();
    expect(b.state.cards).toEqual(["q1", "q2", "q3"]);
    expect(await recordFiles(snapshotDir)).toHaveLength(0);
    await b.close();

    // A user logs out after the app closed the replica: the queue is cleared through its store.
    await queueOffline(["secret"]);
    expect(await recordFiles(snapshotDir)).toHaveLength(1);
    const queue = await new FilePendingStore(snapshotDir).open(
      jetStreamSnapshotKey({ stream }),
      "laptop",
    );
    await queue.clear();
    await queue.close();
    expect(await recordFiles(snapshotDir)).toHaveLength(0);
    proxy.setRefusing(false);
    const c = await open();
    expect(c.pendingCount).toBe(0);
    await c.synced();
    expect(c.state.cards).toEqual(["q1", "q2", "q3"]);
    await c.close();
    await proxy.stop();
  });
});
