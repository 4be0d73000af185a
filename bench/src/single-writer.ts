import { join } from "node:path";
import { openCounter, payload, runLoops, tcp } from "./lib/common.js";
import { profileTaskInChild, runInChild, type ChildBenchParams } from "./lib/child.js";
import { num, ratio } from "./lib/format.js";
import { target, uniqueStream, type Benchmark } from "./lib/harness.js";
import { acrossPlacements, cpuMs, type Placement } from "./lib/placement.js";
import { WindowProfiler } from "./lib/profiler.js";
import { medianEntryBytes, rawConditionalLoop, rawStream } from "./lib/raw.js";
import { median, percentile } from "./lib/stats.js";

const IN_FLIGHT = 256;
const ROUNDS = 5;

/** Params of the client task (runs in a child process of the placement). */
type Params = ChildBenchParams;

/** What one placement measured (medians are taken by the bench process). */
interface Figures {
  entryBytes: number;
  ms: number;
  rawRates: number[];
  seqRates: number[];
  flightRates: number[];
  flightBatch: number[];
  rawP50: number;
  rawP99: number;
  seqP50: number;
  seqP99: number;
  /** Client process CPU per operation, µs (all threads; user + system). */
  rawCpuUs: number;
  seqCpuUs: number;
  flightCpuUs: number;
  conflicts: number;
  compactions: number;
}

/**
 * The client side: raw conditional publishes, awaited updates and updates with 256 in flight,
 * in short alternating segments so drift on the machine hits them alike.
 */
export async function singleWriterTask(p: Params): Promise<unknown> {
  const ms = Math.round(1_000 * p.scale);
  const nc = await tcp(p.url);
  const seqStream = uniqueStream("SW_SEQ");
  const seq = await openCounter(p.url, seqStream, p.tmpDir);
  // Warm-up (JIT, server), and the size of one update entry as stored.
  await runLoops(1, Math.round(1_500 * p.scale), () => seq.update("increment", { by: 1 }));
  const entryBytes = await medianEntryBytes(nc, seqStream, seq.revision);
  if (p.profile) {
    const profiler = new WindowProfiler();
    await profiler.start();
    const r = await runLoops(1, p.profile.windowMs, () => seq.update("increment", { by: 1 }));
    await profiler.stop(p.profile.file);
    await seq.close();
    await nc.close();
    return { what: "sync.update awaited one at a time", ops: r.ops, windowMs: r.elapsedMs };
  }
  const flight = await openCounter(p.url, uniqueStream("SW_FLIGHT"), p.tmpDir);
  const raw = await rawStream(nc, uniqueStream("SW_RAW"));
  const data = payload(entryBytes);
  await rawConditionalLoop(raw.js, raw.subject, data, Math.round(1_500 * p.scale));
  await runLoops(IN_FLIGHT, Math.round(500 * p.scale), () => flight.update("increment", { by: 1 }));

  const f: Figures = {
    ...{ entryBytes, ms, rawRates: [], seqRates: [], flightRates: [], flightBatch: [] },
    ...{ rawP50: 0, rawP99: 0, seqP50: 0, seqP99: 0, rawCpuUs: 0, seqCpuUs: 0, flightCpuUs: 0 },
    ...{ conflicts: 0, compactions: 0 },
  };
  const rawLat: number[] = [];
  const seqLat: number[] = [];
  const cpu = { raw: [0, 0], seq: [0, 0], flight: [0, 0] };
  for (let round = 0; round < ROUNDS; round++) {
    let c0 = process.cpuUsage();
    const r = await rawConditionalLoop(raw.js, raw.subject, data, ms, rawLat);
    cpu.raw = [cpu.raw[0]! + cpuMs(c0), cpu.raw[1]! + r.ops];
    f.rawRates.push((r.ops * 1000) / r.elapsedMs);

    c0 = process.cpuUsage();
    const s = await runLoops(1, ms, async () => {
      const t = performance.now();
      await seq.update("increment", { by: 1 });
      seqLat.push(performance.now() - t);
    });
    cpu.seq = [cpu.seq[0]! + cpuMs(c0), cpu.seq[1]! + s.ops];
    f.seqRates.push((s.ops * 1000) / s.elapsedMs);

    const appends0 = flight.stats.appends;
    c0 = process.cpuUsage();
    const fl = await runLoops(IN_FLIGHT, ms, () => flight.update("increment", { by: 1 }));
    cpu.flight = [cpu.flight[0]! + cpuMs(c0), cpu.flight[1]! + fl.ops];
    f.flightRates.push((fl.ops * 1000) / fl.elapsedMs);
    f.flightBatch.push(fl.ops / Math.max(1, flight.stats.appends - appends0));
  }
  f.conflicts = seq.stats.conflicts;
  f.compactions = seq.stats.compactions;
  f.rawP50 = percentile(rawLat, 50);
  f.rawP99 = percentile(rawLat, 99);
  f.seqP50 = percentile(seqLat, 50);
  f.seqP99 = percentile(seqLat, 99);
  f.rawCpuUs = (cpu.raw[0]! * 1000) / cpu.raw[1]!;
  f.seqCpuUs = (cpu.seq[0]! * 1000) / cpu.seq[1]!;
  f.flightCpuUs = (cpu.flight[0]! * 1000) / cpu.flight[1]!;
  await seq.close();
  await flight.close();
  await nc.close();
  return f;
}

/**
 * 1. One writer appending conditional updates, awaited one at a time and with many in flight
 * (queued locally, batched into shared appends), against raw conditional `js.publish` with the
 * same headers and payload size on a stream of the same configuration; in both placements.
 */
export const singleWriter: Benchmark = {
  name: "single-writer",
  title: "1. Single writer, conditional updates",
  needsServer: false,
  async run(ctx) {
    const measured = await acrossPlacements(ctx.progress, (placement, server) =>
      runInChild<Figures>(
        "single-writer",
        { url: server.url, tmpDir: join(ctx.tmpDir, placement), scale: ctx.scale },
        { placement },
      ),
    );
    const us = (v: number) => num(v * 1000, 0);
    const rows: string[][] = [];
    const per = new Map<
      Placement,
      { raw: number; seq: number; flight: number; seqRatio: number; flightRatio: number }
    >();
    let title = "";
    for (const [placement, f] of measured.results) {
      const raw = median(f.rawRates);
      const seq = median(f.seqRates);
      const flight = median(f.flightRates);
      // ratio of each segment to the raw segment just before it, then the median
      const seqRatio = median(f.seqRates.map((v, i) => v / f.rawRates[i]!));
      const flightRatio = median(f.flightRates.map((v, i) => v / f.rawRates[i]!));
      per.set(placement, { raw, seq, flight, seqRatio, flightRatio });
      title = `updates/s, median of ${ROUNDS} alternating runs of ${f.ms / 1000} s; entry ${f.entryBytes} B; ratio = median of per-run ratios; client CPU = the client process's CPU time per update`;
      rows.push(
        [
          placement,
          "raw js.publish, expected last sequence (reference)",
          num(raw),
          "1.00x",
          us(f.rawP50),
          us(f.rawP99),
          num(f.rawCpuUs, 0),
        ],
        [
          placement,
          "sync.update, awaited one at a time",
          num(seq),
          ratio(seqRatio),
          us(f.seqP50),
          us(f.seqP99),
          num(f.seqCpuUs, 0),
        ],
        [
          placement,
          `sync.update, ${IN_FLIGHT} in flight (mean ${num(median(f.flightBatch))} per append)`,
          num(flight),
          ratio(flightRatio),
          "",
          "",
          num(f.flightCpuUs, 0),
        ],
      );
    }
    const c = per.get(measured.counting)!;
    const cf = measured.results.get(measured.counting)!;
    return {
      tables: [
        {
          title,
          table: {
            headers: ["placement", "", "updates/s", "vs raw", "p50 µs", "p99 µs", "client CPU µs"],
            rows,
            left: 2,
          },
          note: `(${measured.counting}: the awaited writer compacted ${cf.compactions} times and conflicted ${cf.conflicts} times)`,
        },
      ],
      summary: [...per].flatMap(([placement, v]) => [
        {
          figure: `conditional updates/s, one writer, awaited (${placement})`,
          value: num(v.seq),
          reference: `${num(v.raw)} raw publish`,
          ratio: ratio(v.seqRatio),
        },
        {
          figure: `conditional updates/s, one writer, ${IN_FLIGHT} in flight (${placement})`,
          value: num(v.flight),
          reference: `${num(v.raw)} raw publish`,
          ratio: ratio(v.flightRatio),
        },
      ]),
      targets: [
        target(
          `awaited single writer / raw publish (${measured.counting})`,
          c.seqRatio,
          ">=",
          0.85,
          `${num(c.seq)} / ${num(c.raw)} updates/s; client CPU ${num(cf.seqCpuUs, 0)} vs ${num(cf.rawCpuUs, 0)} µs per update`,
        ),
      ],
      data: {
        inFlight: IN_FLIGHT,
        rounds: ROUNDS,
        placements: Object.fromEntries(measured.results),
      },
      failures: measured.failures,
    };
  },
  profile: (ctx) => profileTaskInChild("single-writer", ctx),
};
