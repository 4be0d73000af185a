// The page of bench/src/browser-tabs.ts (bundled with esbuild): a board replica like the collab
// board's, with tabs shared (the default with `servers`) and the offline queue, and an optimistic
// subscriber that reads the view as a rendering page would. `globalThis.benchStart(id)` starts
// one edit (not awaited); `benchSettle()` resolves once every edit started committed (their count).
import { defineModel, exposeSynchronizer, openSynchronizer } from "@statesync/browser";
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
const sync = await openSynchronizer({
  servers: params.get("server")!,
  stream: params.get("stream")!,
  model: boardModel,
  pending: offlineQueue({ owner: "board" }),
});
exposeSynchronizer(sync);
let shown = 0;
const started: Promise<unknown>[] = [];
sync.subscribe((state) => (shown = state.lists[0]!.cards.length), { optimistic: true });
Object.assign(globalThis, {
  benchShown: () => shown,
  benchStart(id: string): void {
    started.push(sync.update("addCard", { id, listId: "todo", title: id }));
  },
  async benchRun(prefix: string, n: number, gapMs: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      started.push(
        sync.update("addCard", { id: `${prefix}${i}`, listId: "todo", title: `${prefix}${i}` }),
      );
      if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    }
  },
  async benchSettle(): Promise<number> {
    const results = await Promise.allSettled(started);
    return results.filter((r) => r.status === "fulfilled").length;
  },
});
document.body.dataset.opened = "true";
