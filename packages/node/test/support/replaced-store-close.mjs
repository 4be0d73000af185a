// A fresh-eyes trial's program: a live replica whose server comes back with another store that
// holds a stream of the same name. The replica stalls LOG_REPLACED and is closed at once; the
// process must then exit by itself. Before, nats.js 2.x bound a new pull (with an idle-heartbeat
// timer that never stops) to the follower's stopped iterator, and the process never exited.
// Starts its own two servers (free ports, temporary directories) and stops them.
import { cp, rm } from "node:fs/promises";
import process from "node:process";
import { clearTimeout, setTimeout } from "node:timers";
import { z } from "zod/v4";
import { defineModel, openSynchronizer, startNatsServer } from "@statesync/node";

const model = defineModel({
  name: "exit-check",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});
const stream = "REPLACED";
const a = await startNatsServer({ keepStore: true });
const b = await startNatsServer({ keepStore: true });
try {
  const other = await openSynchronizer({ servers: b.url, stream, model, snapshots: false });
  for (let i = 0; i < 5; i++) await other.update("inc", {});
  await other.close();
  await b.stop({ keepStore: true });

  const sync = await openSynchronizer({ servers: a.url, stream, model, snapshots: false });
  await sync.update("inc", {});
  let timer;
  const replaced = new Promise((resolve) => {
    sync.on("error", (e) => e.code === "LOG_REPLACED" && resolve("LOG_REPLACED"));
    timer = setTimeout(() => resolve(`no LOG_REPLACED within 20 s: ${sync.status}`), 20_000);
  });
  await a.stop({ keepStore: true });
  await rm(a.storeDir, { recursive: true, force: true });
  await cp(b.storeDir, a.storeDir, { recursive: true });
  await a.restart();
  const outcome = await replaced;
  clearTimeout(timer);
  await sync.close();
  process.stdout.write(`${outcome} then closed\n`);
} finally {
  await a.stop();
  await rm(b.dir, { recursive: true, force: true });
}
