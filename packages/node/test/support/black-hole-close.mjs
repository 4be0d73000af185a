/* global setTimeout */
// A program whose server accepts TCP and never answers: it opens a replica without waiting for
// the connection, asks for an update, closes after a while, and must then exit by itself. It
// prints the replica's error reports (codes and messages) on stdout, one per line.
import process from "node:process";
import { z } from "zod/v4";
import { defineModel, openSynchronizer } from "@statesync/node";

const model = defineModel({
  name: "exit-check",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});
const servers = process.argv[2].split(",");
const sync = await openSynchronizer({
  servers: servers.length === 1 ? servers[0] : servers,
  stream: `BLACKHOLE_${process.pid}`,
  model,
  snapshots: false,
  waitFor: "restored",
  // In the given order (argv[3] "ordered"): nats.js otherwise shuffles a list.
  connectOptions: { timeout: 500, noRandomize: process.argv[3] === "ordered" },
  onError: (e) => process.stdout.write(`${e.code} ${e.message}\n`),
});
const update = sync.update("inc", {}).then(
  (r) => `revision ${r.revision}`,
  (e) => e.code,
);
await new Promise((r) => setTimeout(r, 1_500));
await sync.close();
process.stdout.write(`update ${await update}\n`);
