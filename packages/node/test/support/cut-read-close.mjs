// A program that opens a replica (waitFor "restored": it catches up in the background), closes it
// once the connection is lost, and should then exit by itself. Arguments: the server's URL, the
// stream, requestTimeoutMs.
import process from "node:process";
import { setTimeout } from "node:timers";
import { z } from "zod/v4";
import { defineModel, openSynchronizer } from "@statesync/node";

const model = defineModel({
  name: "exit-check",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});
let closing;
const sync = await openSynchronizer({
  servers: process.argv[2],
  stream: process.argv[3],
  model,
  snapshots: false,
  waitFor: "restored",
  requestTimeoutMs: Number(process.argv[4]),
  onStatus: (status) => {
    if (status === "offline") closing ??= new Promise((r) => setTimeout(r, 300));
  },
});
while (closing === undefined) await new Promise((r) => setTimeout(r, 20));
await closing;
const started = Date.now();
await sync.close();
process.stdout.write(`closed in ${Date.now() - started} ms\n`);
