/**
 * A ledger client in its own process, for the client-crash fault tests (started with
 * `child_process.fork`, killed with SIGKILL) and the soak test (32 of them). Plain JavaScript on
 * the built packages, since the child runs on bare Node. The model must match `ledger` in
 * models.ts (a mismatch fails the test with MODEL_MISMATCH).
 *
 * argv[2]: JSON options:
 * - `servers`, `stream`, `clientId`, `incarnation` (op ids are `<clientId>#<incarnation>.<n>`);
 * - `snapshotDir`: disk snapshots there after every `snapshotEvery` (default 1) entries; none
 *   without it;
 * - `ops`: how many increments (0: until `durationMs` has passed, or until killed), one after
 *   another, unconditional every `unconditionalEvery`-th (default 3), else conditional, with a
 *   random pause of `pauseMs: [min, max]` between them (default none);
 * - `compaction`: the synchronizer option (default false);
 * - `crashInSnapshotWrite`: the first snapshot write after `ops/2` operations writes half of a
 *   temporary file, reports `{ type: "mid-write" }` and hangs, to be killed right there;
 * - `hashEvery`: hash the state at every n-th notification only (default 1);
 * - `heapEveryMs`: report `{ type: "heap", heapUsed }` measured after a forced GC (needs
 *   `--expose-gc`) this often (default never).
 *
 * Messages to the parent (each sent before the next step, so a SIGKILL loses none that matter):
 * `{ type: "ready", revision, restored }`, `{ type: "invoke", opId, kind, by }`,
 * `{ type: "outcome", opId, outcome, ms }` (`{ status: "ok", revision }` or
 * `{ status: "error", code }`; `ms` from invocation to outcome),
 * `{ type: "observe", revision, hash, count, opsLength, lastOp }`, `{ type: "error", code, message }`
 * (an "error" event), `{ type: "heap", heapUsed }`, `{ type: "fatal", message }` (an uncaught
 * exception or unhandled rejection: the process then exits 1),
 * `{ type: "done", revision, hash, stats }`.
 */
import { writeFile } from "node:fs/promises";
import process from "node:process";
import { clearInterval, setInterval, setTimeout } from "node:timers";
import { z } from "zod";
import { defineModel, FileSnapshotStore, openSynchronizer, stateHash } from "@statesync/node";

// A copy of fixtures/hostile/ledger-model.ts: this child runs under plain Node 20, which cannot
// import TypeScript. A drift of the name, version or initial state fails the crash tests
// (MODEL_MISMATCH at open); keep the commands in step by hand.
const ledger = defineModel({
  name: "ledger",
  state: z.object({
    count: z.number().int(),
    ops: z.array(z.string()),
    notes: z.array(z.string()),
  }),
  initial: { count: 0, ops: [], notes: [] },
  commands: {
    increment: {
      args: z.object({ by: z.number().int(), opId: z.string().min(1).max(64) }),
      apply(draft, args) {
        draft.count += args.by;
        draft.ops.push(args.opId);
      },
    },
    note: {
      args: z.object({ text: z.string().max(4096) }),
      apply(draft, args) {
        draft.notes.push(args.text);
      },
    },
  },
});

const config = JSON.parse(process.argv[2] ?? "{}");
const fatal = (e) => {
  const message = e instanceof Error ? `${e.stack}` : String(e);
  if (process.connected) process.send({ type: "fatal", message }, () => process.exit(1));
  else process.exit(1);
};
process.on("uncaughtException", fatal);
process.on("unhandledRejection", fatal);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const send = (message) =>
  new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send(message, () => resolve());
  });

let armed = false;
/** A FileSnapshotStore that can hang halfway through writing its temporary file. */
class HangingStore extends FileSnapshotStore {
  async writeAtomically(path, text) {
    if (armed) {
      armed = false;
      await writeFile(
        `${path}.${process.pid}.7042e000.tmp`, // the store's own naming: "torn" in hex
        text.slice(0, Math.floor(text.length / 2)),
      );
      await send({ type: "mid-write" });
      await new Promise(() => undefined); // killed here
    }
    return super.writeAtomically(path, text);
  }
}

const sync = await openSynchronizer({
  servers: config.servers,
  stream: config.stream,
  model: ledger,
  clientId: config.clientId,
  snapshots: config.snapshotDir ? new HangingStore(config.snapshotDir) : false,
  snapshotEvery: config.snapshotEvery ?? 1,
  compaction: config.compaction ?? false,
  requestTimeoutMs: 2_000,
  connectOptions: { reconnectTimeWait: 100 },
});
sync.on("error", (e) => void send({ type: "error", code: e.code, message: e.message }));
const hashEvery = config.hashEvery ?? 1;
let notifications = 0;
const observe = (state, revision) =>
  send({
    type: "observe",
    revision,
    hash: notifications++ % hashEvery === 0 ? stateHash(state) : undefined,
    count: state.count,
    opsLength: state.ops.length,
    lastOp: state.ops.at(-1),
  });
await observe(sync.state, sync.revision);
sync.subscribe((state, revision) => void observe(state, revision));
await send({ type: "ready", revision: sync.revision, restored: sync.stats.snapshotsRestored });

let heapTimer;
if (config.heapEveryMs) {
  const measure = () => {
    globalThis.gc?.();
    void send({ type: "heap", heapUsed: process.memoryUsage().heapUsed });
  };
  measure();
  heapTimer = setInterval(measure, config.heapEveryMs);
}

const deadline = config.durationMs ? Date.now() + config.durationMs : Infinity;
const [pauseMin, pauseMax] = config.pauseMs ?? [0, 0];
const every = config.unconditionalEvery ?? 3;
for (let i = 1; config.ops === 0 ? Date.now() < deadline : i <= config.ops; i++) {
  if (config.crashInSnapshotWrite && i === Math.floor(config.ops / 2)) armed = true;
  const opId = `${config.clientId}#${config.incarnation}.${i}`;
  const kind = i % every === 0 ? "unconditional" : "conditional";
  await send({ type: "invoke", opId, kind, by: 1 });
  let outcome;
  const started = Date.now();
  try {
    const r =
      kind === "conditional"
        ? await sync.update("increment", { by: 1, opId })
        : await sync.updateUnconditionally("increment", { by: 1, opId });
    outcome = { status: "ok", revision: r.revision };
  } catch (e) {
    outcome = { status: "error", code: e?.code ?? `EXCEPTION: ${String(e)}` };
  }
  await send({ type: "outcome", opId, outcome, ms: Date.now() - started });
  if (pauseMax > 0) await sleep(pauseMin + Math.random() * (pauseMax - pauseMin));
}
clearInterval(heapTimer);
await sync.synced();
await send({
  type: "done",
  revision: sync.revision,
  hash: stateHash(sync.state),
  stats: sync.stats,
});
await sync.close();
process.exit(0);
