// Offline-queue startup benchmark (issue 12): how long a replica takes to open and show its
// optimistic view ("render") with 20,000 pending edits stored (each retitles one of 500 cards),
// side by side with an empty queue, for the in-memory store and the file store of the snapshot
// directory; then how long the queue takes to drain once the log is back, and how long a drain of
// as many new cards takes, the state growing to that many cards in one record (issue 12). Not one of the seven benchmarks of main.ts:
//   npm run bench:pending            (20,000 pending)
//   npm run bench:pending -- --quick (2,000 pending)
// Runs on MemoryLog (the log "offline", as a page opened while the server is down): no server.
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  type PendingStore,
} from "@statesync/core";
import { FilePendingStore } from "@statesync/node";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod/v4";

/** Pending edits (`main`'s argument; `bench/test` runs a few hundred). */
let PENDING = process.argv.includes("--quick") ? 2_000 : 20_000;
const ROUNDS = 3;
/** Cards the edits touch: the state stays this size. */
const CARDS = 500;

const board = defineModel({
  name: "bench-board",
  state: z.object({
    cards: z.record(z.string(), z.object({ title: z.string(), col: z.number() })),
  }),
  initial: { cards: {} },
  commands: {
    addCard: {
      args: z.object({ id: z.string(), title: z.string() }),
      apply(draft, { id, title }) {
        draft.cards[id] = { title, col: 0 };
      },
    },
    setTitle: {
      args: z.object({ id: z.string(), title: z.string() }),
      apply(draft, { id, title }) {
        const card = draft.cards[id];
        if (card) card.title = title;
        else draft.cards[id] = { title, col: 0 };
      },
    },
  },
});

const ms = (t0: number) => performance.now() - t0;
const fmt = (n: number) => `${n.toFixed(1)} ms`;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * Queues `count` edits into `store` through a replica whose `log` is offline. The same log is
 * opened again to render and to drain them: queued updates are bound to the log they were queued
 * for (docs/offline.md), and a fresh `MemoryLog` is another log, whose replica sets them aside
 * (`LOG_REPLACED`) instead of pushing them.
 */
async function fill(store: PendingStore, log: MemoryLog, count: number): Promise<number> {
  const sync = await createSynchronizer({
    log,
    model: board,
    pending: pendingQueue({ store, owner: "page" }),
  });
  log.setOffline(true);
  const t0 = performance.now();
  const queued: Array<Promise<unknown>> = [];
  for (let i = 0; i < count; i++) {
    const p = sync.update("setTitle", { id: `c${i % CARDS}`, title: `title ${i}` });
    p.catch(() => undefined);
    queued.push(p.queued);
  }
  await Promise.all(queued);
  const took = ms(t0);
  await sync.close();
  return took;
}

/** Opens a replica on `log`, offline, over `store` and computes its optimistic view. */
async function openAndRender(store: PendingStore, log: MemoryLog) {
  log.setOffline(true);
  const t0 = performance.now();
  const sync = await createSynchronizer({
    log,
    model: board,
    pending: pendingQueue({ store, owner: "page" }),
  });
  const opened = ms(t0);
  const cards = Object.values(sync.optimisticState.cards).filter((c) => c.title !== "").length;
  const rendered = ms(t0);
  await sync.close();
  return { opened, rendered, cards, pending: sync.pendingCount };
}

/** The log comes back: time until the queue drained, with an optimistic subscriber. */
async function drain(
  store: PendingStore,
  log: MemoryLog,
): Promise<{ ms: number; notifications: number }> {
  log.setOffline(true);
  const sync = await createSynchronizer({
    log,
    model: board,
    pending: pendingQueue({ store, owner: "page" }),
  });
  let notifications = 0;
  sync.subscribe(() => (notifications += 1), { optimistic: true });
  const t0 = performance.now();
  log.setOffline(false);
  await sync.flush();
  const took = ms(t0);
  const last = sync.state.cards[`c${(PENDING - 1) % CARDS}`]?.title;
  await sync.close();
  if (last !== `title ${PENDING - 1}`) throw new Error(`drained, but the last edit is ${last}`);
  return { ms: took, notifications };
}

/**
 * The large-state case (issue 12): `count` queued `addCard` edits, each a new card, so the state
 * the drain works on grows to `count` cards in one record. Queued offline, then drained.
 */
async function drainLarge(count: number): Promise<number> {
  const store = new MemoryPendingStore();
  const log = new MemoryLog();
  log.setOffline(true);
  const sync = await createSynchronizer({
    log,
    model: board,
    pending: pendingQueue({ store, owner: "page" }),
  });
  const queued: Array<Promise<unknown>> = [];
  for (let i = 0; i < count; i++) {
    const p = sync.update("addCard", { id: `n${i}`, title: `t${i}` });
    p.catch(() => undefined);
    queued.push(p.queued);
  }
  await Promise.all(queued);
  const t0 = performance.now();
  log.setOffline(false);
  await sync.flush();
  const took = ms(t0);
  const cards = Object.keys(sync.state.cards).length;
  await sync.close();
  if (cards !== count) throw new Error(`drained, but the state has ${cards} cards`);
  return took;
}

/** The whole benchmark with `pending` edits; throws when a drain leaves the wrong state. */
export async function main(pending = PENDING): Promise<void> {
  PENDING = pending;
  const dir = await mkdtemp(join(tmpdir(), "statesync-bench-pending-"));
  try {
    const stores: Array<[string, () => PendingStore, MemoryLog]> = [];
    const memory = new MemoryPendingStore();
    const emptyMemory = new MemoryPendingStore();
    const [memoryLog, fileLog] = [new MemoryLog(), new MemoryLog()];
    stores.push(
      ["memory, empty", () => emptyMemory, new MemoryLog()],
      [`memory, ${PENDING}`, () => memory, memoryLog],
    );
    stores.push(
      ["file, empty", () => new FilePendingStore(join(dir, "empty")), new MemoryLog()],
      [`file, ${PENDING}`, () => new FilePendingStore(join(dir, "full")), fileLog],
    );
    console.log(`Queueing ${PENDING} edits offline (each stored before it counts as queued):`);
    console.log(`  memory store: ${fmt(await fill(memory, memoryLog, PENDING))}`);
    const fileFill = await fill(new FilePendingStore(join(dir, "full")), fileLog, PENDING);
    console.log(
      `  file store:   ${fmt(fileFill)} (${(fileFill / PENDING).toFixed(3)} ms per edit, fsync each)`,
    );

    console.log(`\nOpening a replica on an offline log (median of ${ROUNDS}):`);
    console.log("| store | pending | open (ms) | open + optimistic view (ms) |");
    console.log("| --- | --- | --- | --- |");
    const figures = new Map<string, number>();
    for (const [name, store, log] of stores) {
      const runs = [];
      for (let r = 0; r < ROUNDS; r++) runs.push(await openAndRender(store(), log));
      const opened = median(runs.map((x) => x.opened));
      const rendered = median(runs.map((x) => x.rendered));
      figures.set(name, rendered);
      console.log(
        `| ${name} | ${runs[0]!.pending} | ${opened.toFixed(1)} | ${rendered.toFixed(1)} |`,
      );
      if (!name.includes("empty") && runs[0]!.cards !== Math.min(CARDS, PENDING)) {
        throw new Error("view incomplete");
      }
    }
    const fileRatio = figures.get(`file, ${PENDING}`)! / figures.get("file, empty")!;
    console.log(`\nfile store, ${PENDING} pending vs empty: ${fileRatio.toFixed(1)}x`);
    const slowest = figures.get(`file, ${PENDING}`)!;
    console.log(
      `target: open and render ${PENDING} pending in a few seconds at most (3,000 ms): ${slowest <= 3_000 ? "MET" : "MISSED"} (${fmt(slowest)})`,
    );

    console.log(`\nThe log is back: draining ${PENDING} pending (one run each):`);
    const m = await drain(memory, memoryLog);
    console.log(`  memory store: ${fmt(m.ms)}, ${m.notifications} view notifications`);
    const f = await drain(new FilePendingStore(join(dir, "full")), fileLog);
    console.log(`  file store:   ${fmt(f.ms)}, ${f.notifications} view notifications`);

    const large = await drainLarge(PENDING);
    console.log(
      `\nLarge state: draining ${PENDING} queued addCard edits into one record (memory store): ${fmt(large)}`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
