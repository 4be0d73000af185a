import { join } from "node:path";
import { createSynchronizer, MemoryLog, type CommandMap, type Model } from "@statesync/node";
import { measureTrace, TRACE_EDITS, TRACE_ROUNDS } from "./apply-trace.js";
import { runInChild } from "./lib/child.js";
import { bytes, num } from "./lib/format.js";
import { target, type Benchmark } from "./lib/harness.js";
import { countingPlacement } from "./lib/placement.js";
import { docsModel, itemsModel } from "./lib/models.js";
import { median } from "./lib/stats.js";

const BACKLOG = 100_000;
const KEYS = 100;
const ROUNDS = 3;
const DOC_BATCHES = 100;
const DOCS_PER_BATCH = 100;

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error("run node with --expose-gc (npm run bench does)");
  g();
  g();
}

/** Time for a fresh replica (not live, no snapshots) to catch up with everything in `log`. */
async function catchUp<S, C extends CommandMap<S>>(log: MemoryLog, model: Model<S, C>) {
  const t = performance.now();
  const sync = await createSynchronizer({
    log: log.handle(),
    model,
    live: false,
    snapshots: false,
    compaction: false,
  });
  const ms = performance.now() - t;
  return { sync, ms };
}

/**
 * 6. The engine alone on MemoryLog (no server): entries applied per second when a replica
 * catches up with a long backlog of conditional updates (Immer patches) and of unconditional
 * commands (recipes run again); the engine's overhead per entry on a text-editing trace beyond
 * the commands' own cost; and the heap a replica holding a 10 MB state uses.
 */
export const apply: Benchmark = {
  name: "apply",
  title: "6. Engine alone (MemoryLog): apply throughput and heap",
  needsServer: false,
  async run(ctx) {
    const backlog = Math.round(BACKLOG * ctx.scale);
    const results: Record<string, { rate: number; rates: number[]; bytes: number }> = {};
    for (const kind of ["update", "command"] as const) {
      ctx.progress(`backlog of ${num(backlog)} ${kind} entries`);
      const log = new MemoryLog({ maxEntryBytes: 16 * 1024 * 1024 });
      const writer = await createSynchronizer({
        log,
        model: itemsModel,
        live: false,
        snapshots: false,
        compaction: false,
        groupCommands: false, // an entry per command: the backlog is counted in entries
      });
      if (kind === "update") {
        for (let i = 0; i < backlog; i++) {
          await writer.update("set", { key: `k${i % KEYS}`, value: i });
        }
      } else {
        const pending: Promise<unknown>[] = [];
        for (let i = 0; i < backlog; i++) {
          pending.push(writer.updateUnconditionally("set", { key: `k${i % KEYS}`, value: i }));
          if (pending.length >= 1_000) await Promise.all(pending.splice(0));
        }
        await Promise.all(pending);
      }
      await writer.close();
      const rates: number[] = [];
      let bytesRead = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const { sync, ms } = await catchUp(log, itemsModel);
        rates.push((sync.stats.entriesApplied * 1000) / ms);
        bytesRead = sync.stats.bytesFetched;
        await sync.close();
      }
      results[kind] = { rate: median(rates), rates, bytes: bytesRead };
    }

    // Catch-up overhead on a text-editing trace (the full 260,000 edits even with --quick: the
    // target is set on that trace; --quick runs fewer rounds).
    const trace = await measureTrace(TRACE_EDITS, ctx.scale < 1 ? 2 : TRACE_ROUNDS, ctx.progress);

    // Heap of a replica holding a 10 MB state (100 entries of 100 documents of ~1 KB).
    ctx.progress("10 MB state");
    const log = new MemoryLog({ maxEntryBytes: 16 * 1024 * 1024 });
    const writer = await createSynchronizer({
      log,
      model: docsModel,
      live: false,
      snapshots: false,
      compaction: false,
    });
    const body = "lorem ipsum dolor sit amet ".repeat(36).slice(0, 960);
    for (let b = 0; b < DOC_BATCHES; b++) {
      const docs: Record<string, { title: string; body: string; tags: string[] }> = {};
      for (let d = 0; d < DOCS_PER_BATCH; d++) {
        const id = `doc-${b}-${d}`;
        docs[id] = { title: `Document ${id}`, body: `${id} ${body}`, tags: ["bench", `b${b}`] };
      }
      await writer.updateUnconditionally("add", { docs });
    }
    await writer.close();
    gc();
    const h0 = process.memoryUsage().heapUsed;
    const { sync, ms: docsMs } = await catchUp(log, docsModel);
    gc();
    const h1 = process.memoryUsage().heapUsed;
    const stateBytes = new TextEncoder().encode(JSON.stringify(sync.state)).byteLength;
    const replicaHeap = h1 - h0;
    const json = JSON.stringify(sync.state);
    await sync.close();
    gc();
    const p0 = process.memoryUsage().heapUsed;
    const plain = JSON.parse(json) as unknown;
    gc();
    const plainHeap = process.memoryUsage().heapUsed - p0;
    void plain;

    const u = results.update!;
    const c = results.command!;
    return {
      tables: [
        {
          title: `catch-up of a fresh replica on a backlog of ${num(backlog)} entries (${num(KEYS)} keys), median of ${ROUNDS}`,
          table: {
            headers: ["entries", "applied/s", "bytes read"],
            rows: [
              ["conditional updates (patches)", num(u.rate), bytes(u.bytes)],
              ["unconditional commands (recipes)", num(c.rate), bytes(c.bytes)],
            ],
          },
        },
        {
          title: `catch-up of a fresh replica on a text-editing trace of ${num(trace.edits)} single-character inserts and deletes (document of ${num(trace.finalLength)} characters at the end), fastest of ${trace.catchUpRuns.length} alternating runs`,
          table: {
            headers: ["", "time", "µs per edit"],
            rows: [
              [
                "fresh replica catching up (MemoryLog), commands checked (format 3)",
                `${num(trace.catchUpMs)} ms`,
                num((trace.catchUpMs * 1000) / trace.edits, 2),
              ],
              [
                "the same written as format 1 (an older SDK's: unchecked)",
                `${num(trace.uncheckedMs)} ms`,
                num((trace.uncheckedMs * 1000) / trace.edits, 2),
              ],
              [
                "the commands' apply in a plain loop on a plain object",
                `${num(trace.plainMs)} ms`,
                num((trace.plainMs * 1000) / trace.edits, 2),
              ],
              ["overhead of the engine per entry (checked)", "", num(trace.overheadUs, 2)],
              ["overhead per entry, format 1 (unchecked)", "", num(trace.uncheckedOverheadUs, 2)],
            ],
          },
        },
        {
          title: `heap of a replica holding a 10 MB state (${DOC_BATCHES} entries of ${DOCS_PER_BATCH} documents)`,
          table: {
            headers: ["", "value"],
            rows: [
              ["state as JSON", bytes(stateBytes)],
              ["heap used by the replica (after GC)", bytes(replicaHeap)],
              ["heap of JSON.parse of the same state (reference)", bytes(plainHeap)],
              ["catch-up time of those 100 entries", `${num(docsMs)} ms`],
            ],
          },
        },
      ],
      summary: [
        {
          figure: "apply throughput, conditional updates (engine alone)",
          value: `${num(u.rate)} entries/s`,
        },
        {
          figure: "apply throughput, unconditional commands (engine alone)",
          value: `${num(c.rate)} entries/s`,
        },
        {
          figure: `catch-up of ${num(trace.edits)} text edits: replica / plain loop; overhead per entry`,
          value: `${num(trace.catchUpMs)} / ${num(trace.plainMs)} ms; ${num(trace.overheadUs, 2)} µs`,
        },
        {
          figure: `heap for a ${bytes(stateBytes)} state`,
          value: bytes(replicaHeap),
          reference: `${bytes(plainHeap)} JSON.parse`,
          ratio: `${(replicaHeap / plainHeap).toFixed(2)}x`,
        },
      ],
      targets: [
        target(
          "catch-up overhead per entry, text trace, µs",
          trace.overheadUs,
          "<=",
          3,
          `(${num(trace.catchUpMs)} - ${num(trace.plainMs)} ms) / ${num(trace.edits)} edits`,
        ),
      ],
      data: {
        trace,
        backlog,
        keys: KEYS,
        update: u,
        command: c,
        stateBytes,
        replicaHeap,
        plainHeap,
        docsMs,
      },
    };
  },
  async profile(ctx) {
    const file = join(ctx.dir, "apply-trace.cpuprofile");
    const r = await runInChild<{ what: string; ops: number; windowMs: number }>(
      "apply-trace-profile",
      { file, edits: TRACE_EDITS },
      { placement: countingPlacement() },
    );
    return { ...r, file };
  },
};
