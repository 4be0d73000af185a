import { z } from "zod";
import {
  defineModel,
  MemoryLog,
  createSynchronizer,
  type CommandMap,
  type CreateSynchronizerOptions,
  type OpenJetStreamOptions,
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

// openJetStreamSynchronizer takes every createSynchronizer option but the log's own (an option
// listed there by hand was once dropped at run time: `upgrade`).
type NotForwarded = Exclude<
  keyof CreateSynchronizerOptions<unknown, CommandMap<unknown>>,
  keyof OpenJetStreamOptions<unknown, CommandMap<unknown>>
>;
const everyOptionForwarded: [NotForwarded] extends ["log" | "ownsLog" | "onClose"] ? true : false =
  true;
void everyOptionForwarded;
