// A whole program as a user writes it: open a live replica without snapshots, update, close.
// It must exit by itself (a process kept alive by a leftover timer never ends). Arguments: the
// server's URL, the stream, and optionally requestTimeoutMs.
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
  ...(process.argv[4] ? { requestTimeoutMs: Number(process.argv[4]) } : {}),
});
await sync.update("inc", {});
await sync.close();
