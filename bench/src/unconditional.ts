import { join } from "node:path";
import { openCounter, payload, runLoops, tcp, type CounterSync } from "./lib/common.js";
import { profileTaskInChild, runInChild, type ChildBenchParams } from "./lib/child.js";
import { num, ratio } from "./lib/format.js";
import { sleep, target, uniqueStream, type Benchmark } from "./lib/harness.js";
import { acrossPlacements, cpuMs } from "./lib/placement.js";
import { WindowProfiler } from "./lib/profiler.js";
import { medianEntryBytes, rawStream } from "./lib/raw.js";
import { median } from "./lib/stats.js";

const IN_FLIGHT = 256;
const ROUNDS = 5;

/** Params of the client task (runs in a child process of the placement). */
type Params = ChildBenchParams;

interface Figures {
  entryBytes: number;
  ms: number;
  rawRates: number[];
  syncRates: number[];
  drains: number[];
  /** Client process CPU per append, µs; statesync's includes applying it (the drain). */
  rawCpuUs: number;
  syncCpuUs: number;
  entriesApplied: number;
  compactions: number;
}

/** Waits until the replica has applied everything appended so far; returns how long it took. */
async function drain(sync: CounterSync, latest: number): Promise<number> {
  const t = performance.now();
  await sync.waitFor(latest);
  return performance.now() - t;
}

/** The client side: raw async publishes and unconditional appends, alternating. */
export async function unconditionalTask(p: Params): Promise<unknown> {
  const ms = Math.round(1_000 * p.scale);
  const nc = await tcp(p.url);
  const syncStream = uniqueStream("UN_SYNC");
  const sync = await openCounter(p.url, syncStream, p.tmpDir);
  let latest = 0;
  const append = async () => {
    const r = await sync.updateUnconditionally("increment", { by: 1 });
    if (r.revision > latest) latest = r.revision;
  };
  await runLoops(IN_FLIGHT, Math.round(1_000 * p.scale), append);
  await drain(sync, latest);
  // The size of one command's entry (awaited, so each goes alone): what raw publishes. Commands
  // in flight together share entries (format 4), which are larger.
  for (let i = 0; i < 31; i++) await append();
  const entryBytes = await medianEntryBytes(nc, syncStream, latest);
  if (p.profile) {
    const profiler = new WindowProfiler();
    await profiler.start();
    const t = performance.now();
    const r = await runLoops(IN_FLIGHT, p.profile.windowMs, append);
    await drain(sync, latest);
    const windowMs = performance.now() - t;
    await profiler.stop(p.profile.file);
    await sync.close();
    await nc.close();
    return {
      what: `updateUnconditionally, ${IN_FLIGHT} in flight, then drained`,
      ops: r.ops,
      windowMs,
    };
  }
  const raw = await rawStream(nc, uniqueStream("UN_RAW"));
  const data = payload(entryBytes);
  let n = 0;
  const publish = () => raw.js.publish(raw.subject, data, { msgID: `raw-${++n}` });
  await runLoops(IN_FLIGHT, Math.round(1_000 * p.scale), publish);

  const f: Figures = {
    ...{ entryBytes, ms, rawRates: [], syncRates: [], drains: [], rawCpuUs: 0, syncCpuUs: 0 },
    ...{ entriesApplied: 0, compactions: 0 },
  };
  const cpu = { raw: [0, 0], sync: [0, 0] };
  for (let round = 0; round < ROUNDS; round++) {
    let c0 = process.cpuUsage();
    const r = await runLoops(IN_FLIGHT, ms, publish);
    cpu.raw = [cpu.raw[0]! + cpuMs(c0), cpu.raw[1]! + r.ops];
    f.rawRates.push((r.ops * 1000) / r.elapsedMs);
    await sleep(50);
    c0 = process.cpuUsage();
    const s = await runLoops(IN_FLIGHT, ms, append);
    f.syncRates.push((s.ops * 1000) / s.elapsedMs);
    f.drains.push(await drain(sync, latest));
    cpu.sync = [cpu.sync[0]! + cpuMs(c0), cpu.sync[1]! + s.ops];
    await sleep(50);
  }
  f.rawCpuUs = (cpu.raw[0]! * 1000) / cpu.raw[1]!;
  f.syncCpuUs = (cpu.sync[0]! * 1000) / cpu.sync[1]!;
  f.entriesApplied = sync.stats.entriesApplied;
  f.compactions = sync.stats.compactions;
  await sync.close();
  await nc.close();
  return f;
}

/**
 * 3. Unconditional appends (`updateUnconditionally`, many in flight) against raw asynchronous
 * `js.publish` (same payload size, a message id each, many in flight), in both placements. The
 * replica also follows the log and applies every command: that is counted (it drains before
 * the next run).
 */
export const unconditional: Benchmark = {
  name: "unconditional",
  title: "3. Unconditional appends, many in flight",
  needsServer: false,
  async run(ctx) {
    const measured = await acrossPlacements(ctx.progress, (placement, server) =>
      runInChild<Figures>(
        "unconditional",
        { url: server.url, tmpDir: join(ctx.tmpDir, placement), scale: ctx.scale },
        { placement },
      ),
    );
    const rows: string[][] = [];
    const per = new Map<string, { raw: number; sync: number; r: number }>();
    let title = "";
    for (const [placement, f] of measured.results) {
      const raw = median(f.rawRates);
      const sync = median(f.syncRates);
      const r = median(f.syncRates.map((v, i) => v / f.rawRates[i]!));
      per.set(placement, { raw, sync, r });
      title = `appends/s with ${IN_FLIGHT} in flight, median of ${ROUNDS} alternating runs of ${f.ms / 1000} s; entry ${f.entryBytes} B; client CPU = the client process's CPU time per append (statesync's includes applying it); statesync's figure counts commands stored (calls resolved), which share entries when in flight together (format 4)`;
      rows.push(
        [placement, "raw js.publish, async (reference)", num(raw), "1.00x", "", num(f.rawCpuUs, 1)],
        [
          placement,
          "sync.updateUnconditionally",
          num(sync),
          ratio(r),
          `${num(median(f.drains))} ms`,
          num(f.syncCpuUs, 1),
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
            headers: ["placement", "", "appends/s", "vs raw", "caught up after", "client CPU µs"],
            rows,
            left: 2,
          },
          note: `(${measured.counting}: the replica applied ${cf.entriesApplied} entries of commands (several commands each when in flight together: format 4), compacted ${cf.compactions} times)`,
        },
      ],
      summary: [...per].map(([placement, v]) => ({
        figure: `unconditional appends/s, ${IN_FLIGHT} in flight (${placement})`,
        value: num(v.sync),
        reference: `${num(v.raw)} raw async publish`,
        ratio: ratio(v.r),
      })),
      targets: [
        target(
          `unconditional appends / raw async publish (${measured.counting})`,
          c.r,
          ">=",
          0.8,
          `${num(c.sync)} / ${num(c.raw)} appends/s; client CPU ${num(cf.syncCpuUs, 1)} vs ${num(cf.rawCpuUs, 1)} µs per append`,
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
  profile: (ctx) => profileTaskInChild("unconditional", ctx),
};
