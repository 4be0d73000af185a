import { expect, it } from "vitest";
import { z } from "zod";
import { createSynchronizer, defineModel, encodeEntry, MemoryLog } from "@statesync/core";

/**
 * A `commands` entry is applied in drafts of several commands; a draft that fails at a command
 * leaves the ones after it unrun, and they keep their parsed arguments for the next draft.
 */
it("a commands entry whose every command throws parses each argument a bounded number of times", async () => {
  let parses = 0;
  const model = defineModel({
    name: "m",
    state: z.object({ n: z.number() }),
    initial: { n: 0 },
    commands: {
      boom: {
        args: z.object({ k: z.number() }).refine(() => ++parses > 0),
        apply() {
          throw new Error("boom");
        },
      },
    },
  });
  const log = new MemoryLog();
  const options = {
    model,
    snapshots: false as const,
    compaction: false as const,
    onError: () => undefined,
  };
  const writer = await createSynchronizer({ log: log.handle(), ...options });
  await writer.close();
  const n = 1_024;
  const commands = Array.from({ length: n }, (_, i) => ({ seed: i, name: "boom", args: { k: i } }));
  await log.appendUnconditional(
    encodeEntry({ v: 4, kind: "commands", ts: 1, client: "t", commands }),
    "hostile",
  );
  const reader = await createSynchronizer({ log: log.handle(), ...options, live: false });
  expect(reader.revision).toBe(2);
  // Before: each draft parsed every command after it again, n²/2 = 524,288 parses (1.1 s of a
  // replica's CPU for an entry of 730 KB), on every replica.
  expect(parses).toBeLessThan(4 * n);
  await reader.close();
});
