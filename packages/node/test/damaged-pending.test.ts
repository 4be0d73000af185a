import { readdir, readFile, truncate, writeFile } from "node:fs/promises";
import path from "node:path";
import { defineModel, openSynchronizer, type StateSyncError } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { until, uniqueStream, useNatsServer } from "./helpers.js";
import { TcpProxy } from "./support/tcp-proxy.js";

/**
 * A tester's report: ten edits queued durably while the log was unreachable, the replica closed,
 * one record file edited into garbage and another truncated, the replica opened again: two edits
 * were gone without an error, an event or a refusal. They must be reported (`CORRUPT_PENDING`,
 * which seqs), kept aside for inspection, never sent, and never hold the other eight up.
 */
const ctx = useNatsServer();

const cards = defineModel({
  name: "cards",
  state: z.object({ cards: z.array(z.string()) }),
  initial: { cards: [] },
  commands: {
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
  },
});

describe("damaged pending records in a FilePendingStore", () => {
  it("are reported (CORRUPT_PENDING with their seqs), kept aside, never sent; the others commit", async () => {
    const stream = uniqueStream("QDAMAGE");
    const snapshotDir = path.join(ctx.dir, stream);
    const proxy = await TcpProxy.start({ host: "127.0.0.1", port: ctx.server.port });
    const errors: StateSyncError[] = [];
    const open = () =>
      openSynchronizer({
        servers: proxy.url,
        connectOptions: { reconnectTimeWait: 100 },
        stream,
        model: cards,
        snapshotDir,
        pending: { owner: "laptop" },
        onError: (e) => errors.push(e),
      });
    let a = await open();
    proxy.setRefusing(true);
    proxy.cutAll();
    await until(() => (a.status === "offline" ? true : undefined));
    const queued = Array.from({ length: 10 }, (_, i) => a.update("add", { card: `c${i}` }));
    for (const p of queued) p.catch(() => undefined);
    const ids = (await Promise.all(queued.map((p) => p.queued))).map((q) => q.id!);
    await a.close();

    const files = (await readdir(snapshotDir, { recursive: true })).filter((f) =>
      f.endsWith(".pending.json"),
    );
    expect(files).toHaveLength(10);
    const fileOf = (seq: number) =>
      path.join(
        snapshotDir,
        files.find((f) => f.endsWith(`${seq}.pending.json`))!,
      );
    await writeFile(fileOf(ids[3]!), "garbage, not a record");
    await truncate(fileOf(ids[6]!), Math.floor((await readFile(fileOf(ids[6]!))).length / 2));

    errors.length = 0;
    a = await open();
    const events: StateSyncError[] = [];
    const refused: number[] = [];
    a.on("error", (e) => events.push(e));
    a.on("refused", (_e, u) => refused.push(u.id!));
    expect(a.pending.map((u) => u.id)).toEqual(ids.filter((_, i) => i !== 3 && i !== 6));
    proxy.setRefusing(false);
    await a.flush();

    const report = (list: StateSyncError[]) => list.filter((e) => e.code === "CORRUPT_PENDING");
    for (const list of [errors, events]) {
      expect(report(list)).toHaveLength(1);
      expect(report(list)[0]!.details).toMatchObject({
        count: 2,
        seqs: [ids[3], ids[6]],
        owner: "laptop",
      });
    }
    expect(refused).toEqual([]);
    expect(a.state.cards).toEqual(["c0", "c1", "c2", "c4", "c5", "c7", "c8", "c9"]);
    const after = await readdir(snapshotDir, { recursive: true });
    expect(after.filter((f) => f.endsWith(".pending.json"))).toEqual([]);
    // Kept aside for inspection, byte for byte, under a name the queue never loads.
    const kept = after.filter((f) => f.endsWith(".pending.json.damaged"));
    expect(kept).toHaveLength(2);
    expect(await readFile(path.join(snapshotDir, kept.sort()[0]!), "utf8")).toBe(
      "garbage, not a record",
    );
    await a.close();

    // Reported once: the next replica on this queue finds nothing damaged, hands out new seqs.
    errors.length = 0;
    a = await open();
    const next = a.update("add", { card: "d" });
    expect((await next.queued).id).toBeGreaterThan(ids[9]!);
    await next;
    expect(report(errors)).toEqual([]);
    expect(a.state.cards).toHaveLength(9);
    await a.close();
    await proxy.stop();
  });
});
