import { z } from "zod";
import {
  defineModel,
  MemoryLog,
  createSynchronizer,
  type CommandMap,
  type CreateSynchronizerOptions,
  type OpenJetStreamOptions,
  type PendingUpdate,
  type QueuedInfo,
  MemoryPendingStore,
  pendingQueue,
  type SynchronizerOf,
} from "@statesync/core";
const m = defineModel({
  name: "t",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: {
    inc: {
      args: z.object({ by: z.number() }),
      apply(d, a) {
        // @ts-expect-error args are typed: by is a number
        const wrong: string = a.by;
        void wrong;
        d.n += a.by;
      },
    },
  },
});
async function f() {
  const s: SynchronizerOf<typeof m> = await createSynchronizer({ log: new MemoryLog(), model: m });
  await s.update("inc", { by: 1 });
  // @ts-expect-error wrong arg type
  await s.update("inc", { by: "x" });
  // @ts-expect-error unknown command
  await s.update("nope", {});
}
void f;

// The offline queue: `queued` beside the outcome, the optimistic view and the pending list.
async function g() {
  const s: SynchronizerOf<typeof m> = await createSynchronizer({
    log: new MemoryLog(),
    model: m,
    pending: pendingQueue({ store: new MemoryPendingStore(), owner: "device" }),
  });
  const p = s.update("inc", { by: 1 });
  const info: QueuedInfo = await p.queued;
  const durable: boolean = info.durable;
  const { revision } = await p;
  const n: number = s.optimisticState.n + revision;
  const first: PendingUpdate | undefined = s.pending[0];
  s.subscribe((state) => void state.n, { optimistic: true });
  // @ts-expect-error the optimistic view is as immutable as the state
  s.optimisticState.n = 1;
  void [durable, n, first];
}
void g;

// openJetStreamSynchronizer takes every createSynchronizer option but the log's own (an option
// listed there by hand was once dropped at run time: `upgrade`).
type NotForwarded = Exclude<
  keyof CreateSynchronizerOptions<unknown, CommandMap<unknown>>,
  keyof OpenJetStreamOptions<unknown, CommandMap<unknown>>
>;
const everyOptionForwarded: [NotForwarded] extends ["log" | "ownsLog" | "onClose"] ? true : false =
  true;
void everyOptionForwarded;
