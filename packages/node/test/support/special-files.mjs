// A whole program that meets something other than a regular file where statesync reads one from
// its directory: a FIFO, a socket, a device, a directory. It prints one JSON line saying what it
// saw, and must then exit by itself: a read blocked on a FIFO in the thread pool kept the
// process alive for good (a fresh-eyes trial).
//   node special-files.mjs snapshot DIR fifo|socket|device|directory
//   node special-files.mjs pending DIR record|queue|lock
import { execFileSync } from "node:child_process";
import { lstat, mkdir, symlink, unlink } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import process from "node:process";
import { z } from "zod/v4";
import {
  createSynchronizer,
  defineModel,
  FilePendingStore,
  FileSnapshotStore,
  MemoryLog,
  pendingQueueFolder,
} from "@statesync/node";

const [scenario, dir, kind] = process.argv.slice(2);
const model = defineModel({
  name: "special-files",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: { inc: { args: z.object({}), apply: (d) => void (d.n += 1) } },
});
const outcome = (err) => ({ code: err?.code, message: String(err?.message ?? err) });

/** Puts something that is not a regular file at `path`. */
async function makeSpecial(path, what) {
  if (what === "fifo") execFileSync("mkfifo", [path]);
  else if (what === "device") await symlink("/dev/null", path);
  else if (what === "directory") await mkdir(path);
  else if (what === "socket") {
    const server = createServer();
    await new Promise((resolve) => server.listen(path, resolve));
    server.unref(); // left listening (closing it would remove the file), never keeps us alive
  } else throw new Error(`unknown kind ${what}`);
}

if (scenario === "snapshot") {
  const store = new FileSnapshotStore(dir);
  await makeSpecial(store.pathOf("k"), kind);
  const load = await store.load("k").then(() => ({ code: "loaded" }), outcome);
  const errors = [];
  const sync = await createSynchronizer({
    log: new MemoryLog(),
    model,
    snapshots: store,
    snapshotKey: "k",
    onError: (e) => errors.push(e.code),
  });
  await sync.update("inc", {});
  const closed = await sync.close().then(() => "closed", outcome);
  const replaced = await lstat(store.pathOf("k")).then((s) => s.isFile());
  process.stdout.write(`${JSON.stringify({ load, errors, closed, replaced })}\n`);
} else if (scenario === "pending") {
  const store = new FilePendingStore(dir);
  const folder = join(dir, pendingQueueFolder("k", "me"));
  const first = await store.open("k", "me");
  await first.put({ format: 1, seq: 1, kind: "update", name: "inc", args: {}, queuedAt: 1, mv: 1 });
  await first.close();
  if (kind === "record") await makeSpecial(join(folder, "000000000002.pending.json"), "fifo");
  if (kind === "queue") {
    await unlink(join(folder, "queue.json"));
    await makeSpecial(join(folder, "queue.json"), "fifo");
  }
  if (kind === "lock") await makeSpecial(join(folder, "lock"), "fifo");
  const result = await store.open("k", "me").then(
    async (queue) => {
      const loaded = await queue.load();
      await queue.close();
      return {
        records: loaded.records.map((r) => r.seq),
        damaged: (loaded.damaged ?? []).map((d) => ({ seq: d.seq, reason: d.reason })),
      };
    },
    (err) => ({ open: outcome(err) }),
  );
  process.stdout.write(`${JSON.stringify(result)}\n`);
} else {
  throw new Error(`unknown scenario ${scenario}`);
}
