// The page of bench/src/browser-pending.ts (bundled with esbuild). `?phase=fill&n=N` stores N
// pending edits of a board like the collab board's directly in the queue's IndexedDB store (what N edits made
// offline leave behind); `?phase=open` opens the board's replica offline and computes the
// optimistic view. Results go to `globalThis.benchResult`.
import {
  defineModel,
  IndexedDbPendingStore,
  jetStreamSnapshotKey,
  openSynchronizer,
} from "@statesync/browser";
import { offlineQueue } from "@statesync/browser/offline";
import { z } from "zod";

/** The collab board's shape and its addCard command (examples/collab-board/src/board-model.ts). */
const boardModel = defineModel({
  name: "collab-board",
  version: 1,
  state: z.object({
    lists: z.array(
      z.object({
        id: z.string(),
        title: z.string(),
        cards: z.array(z.object({ id: z.string(), title: z.string() })),
      }),
    ),
  }),
  initial: { lists: [{ id: "todo", title: "To do", cards: [] }] },
  commands: {
    addCard: {
      args: z.object({ id: z.string(), listId: z.string(), title: z.string() }),
      apply(draft, args) {
        const list = draft.lists.find((l) => l.id === args.listId);
        if (!list) throw new Error("the list no longer exists");
        list.cards.push({ id: args.id, title: args.title });
      },
    },
  },
});

const params = new URLSearchParams(location.search);
const stream = "board_bench";
const key = jetStreamSnapshotKey({ stream });

async function fill(n: number): Promise<void> {
  const store = new IndexedDbPendingStore();
  const queue = await store.open(key, "bench-0");
  for (let from = 1; from <= n; from += 1_000) {
    const puts = [];
    for (let seq = from; seq < Math.min(n + 1, from + 1_000); seq++) {
      puts.push(
        queue.put({
          format: 1,
          seq,
          kind: "update",
          name: "addCard",
          args: { id: `c${seq}`, listId: "todo", title: `card ${seq}` },
          queuedAt: Date.now(),
          mv: 1,
        }),
      );
    }
    await Promise.all(puts);
  }
  await queue.close();
  await store.close();
}

async function open(): Promise<{ openMs: number; viewMs: number; pending: number; cards: number }> {
  const t0 = performance.now();
  const sync = await openSynchronizer({
    servers: "ws://127.0.0.1:9", // nobody listens: the page is offline
    stream,
    model: boardModel,
    pending: offlineQueue({ owner: "bench" }),
  });
  const t1 = performance.now();
  const cards = sync.optimisticState.lists.reduce((n, l) => n + l.cards.length, 0);
  const t2 = performance.now();
  const pending = sync.pendingCount;
  await sync.close();
  return { openMs: t1 - t0, viewMs: t2 - t1, pending, cards };
}

const phase = params.get("phase");
(globalThis as { benchResult?: unknown }).benchResult = await (phase === "fill"
  ? fill(Number(params.get("n"))).then(() => ({ filled: Number(params.get("n")) }))
  : open());
