/**
 * A fresh Node process for one measured cold start of the chunked-snapshot benchmark (so the
 * peak memory it reports is this start's alone): opens a replica of the stream named on the
 * command line, reports time and memory, and with `compact` also compacts and reports that, or
 * with `follow` keeps following (default compaction and local snapshots on) and reports its heap
 * once a second until told to stop. Started by `chunked.ts` with `--expose-gc --trace-gc`: the
 * parent takes the peak heap of the start from the GC lines between the `@@open-` marks.
 */
import { openSynchronizer, stateHash } from "@statesync/node";
import { getHeapStatistics } from "node:v8";
import { chunkedModel } from "./lib/chunked-model.js";

const [url, stream, mode, snapshotDir] = process.argv.slice(2) as [string, string, string, string];
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);
const send = (m: unknown) => new Promise<void>((r) => process.send!(m, () => r()));

async function main(): Promise<void> {
  gc();
  const baseRssKiB = process.resourceUsage().maxRSS;
  const baseHeap = process.memoryUsage().heapUsed;
  let peakHeap = baseHeap;
  const sampler = setInterval(() => {
    peakHeap = Math.max(peakHeap, getHeapStatistics().used_heap_size);
  }, 2);
  // Between these marks, the parent reads the heap size at every GC from --trace-gc's lines.
  process.stdout.write(`@@open-start ${baseHeap}\n`);
  const t = performance.now();
  const sync = await openSynchronizer({
    servers: url,
    stream,
    model: chunkedModel,
    live: mode === "follow",
    ...(mode === "follow" ? { snapshotDir } : { snapshots: false, compaction: false }),
  });
  const openMs = performance.now() - t;
  peakHeap = Math.max(peakHeap, getHeapStatistics().used_heap_size);
  process.stdout.write(`@@open-end ${peakHeap}\n`);
  clearInterval(sampler);
  const peakRssKiB = process.resourceUsage().maxRSS;
  gc();
  const heapHeld = process.memoryUsage().heapUsed - baseHeap;
  const jsonBytes = Buffer.byteLength(JSON.stringify(sync.state));
  const report: Record<string, unknown> = {
    type: "opened",
    openMs,
    revision: sync.revision,
    hash: stateHash(sync.state),
    jsonBytes,
    bytesFetched: sync.stats.bytesFetched,
    entriesApplied: sync.stats.entriesApplied,
    peakRssGrowth: (peakRssKiB - baseRssKiB) * 1024,
    peakHeapGrowth: peakHeap - baseHeap,
    heapHeld,
  };
  if (mode === "compact") {
    const c = performance.now();
    await sync.compact();
    report.compactMs = performance.now() - c;
    report.revisionAfter = sync.revision;
  }
  await send(report);
  if (mode === "follow") {
    const series: number[] = [];
    const revisions: number[] = [];
    const timer = setInterval(() => {
      gc();
      series.push(process.memoryUsage().heapUsed - baseHeap); // like heapHeld
      revisions.push(sync.revision);
    }, 1_000);
    const stop = await new Promise<{ latest: number }>((resolve) =>
      process.once("message", (m) => resolve(m as { latest: number })),
    );
    clearInterval(timer);
    // How far behind it was when the writes stopped: the time it takes to reach their last.
    const behind = stop.latest - sync.revision;
    const c = performance.now();
    await sync.waitFor(stop.latest, { signal: AbortSignal.timeout(120_000) });
    await send({
      type: "followed",
      series,
      revisions,
      behind,
      catchUpMs: performance.now() - c,
      revision: sync.revision,
      hash: stateHash(sync.state),
      compactions: sync.stats.compactions,
      snapshotsSaved: sync.stats.snapshotsSaved,
      entriesApplied: sync.stats.entriesApplied,
    });
  }
  await sync.close();
}

main().then(
  () => process.exit(0),
  async (e: unknown) => {
    await send({ type: "error", message: String((e as Error)?.stack ?? e) });
    process.exit(1);
  },
);
