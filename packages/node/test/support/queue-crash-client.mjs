// A process with an offline queue that dies (SIGKILL, from inside) at the moment it would remove
// a pending update from its queue: after the append committed, before the removal.
// argv: servers stream snapshotDir owner kind(update|command) card
import process from "node:process";
import { z } from "zod/v4";
import { defineModel, FilePendingStore, openSynchronizer } from "@statesync/node";

// The model of offline-queue.test.ts (same name, state and initial: the same log).
const board = defineModel({
  name: "board",
  state: z.object({ cards: z.array(z.string()), n: z.number().int() }),
  initial: { cards: [], n: 0 },
  commands: {
    add: { args: z.object({ card: z.string() }), apply: (d, { card }) => void d.cards.push(card) },
  },
});

const [servers, stream, snapshotDir, owner, kind, card] = process.argv.slice(2);
const files = new FilePendingStore(snapshotDir);
const store = {
  async open(key, who) {
    const queue = await files.open(key, who);
    return new Proxy(queue, {
      get(target, prop) {
        if (prop === "delete") {
          return async () => {
            process.kill(process.pid, "SIGKILL");
            await new Promise(() => undefined);
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  },
};
const sync = await openSynchronizer({
  servers,
  stream,
  model: board,
  snapshotDir,
  pending: { owner, store },
});
const result =
  kind === "command" ? sync.updateUnconditionally("add", { card }) : sync.update("add", { card });
await result.queued;
process.send?.("queued");
await result; // never: the process dies first
