// A program as a fresh-eyes trial wrote it: a `synced()` call refused for its options (a signal
// that is no AbortSignal), caught, then `close()`. Before, the catch-up `synced()` had started
// before it failed rejected `CLOSED` at `close()`, unhandled: Node exited with status 1.
import process from "node:process";
import { z } from "zod/v4";
import { defineModel, openSynchronizer } from "@statesync/node";

const model = defineModel({
  name: "exit-check",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});
const sync = await openSynchronizer({
  servers: process.argv[2],
  stream: process.argv[3],
  model,
  snapshots: false,
});
const refused = await sync.synced({ signal: "x" }).catch((e) => e);
if (refused?.code !== "VALIDATION") {
  process.stderr.write(`synced({ signal: "x" }) ended with ${String(refused)}\n`);
  process.exitCode = 2;
}
await sync.waitFor(1, { signal: "x" }).catch(() => undefined);
await sync.close();
