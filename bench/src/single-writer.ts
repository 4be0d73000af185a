import { openCounter, payload, runLoops, tcp } from "./lib/common.js";
import { num, ratio } from "./lib/format.js";
import { target, uniqueStream, type Benchmark } from "./lib/harness.js";
import { rawConditionalLoop, rawStream } from "./lib/raw.js";
import { median, percentile } from "./lib/stats.js";

const IN_FLIGHT = 256;
const ROUNDS = 5;

/**
 * 1. One writer appending conditional updates, awaited one at a time and with many in flight
 * (queued locally, batched into shared appends), against raw conditional `js.publish` with the
 * same headers and payload size on a stream of the same configuration. The three alternate in
 * short segments so that drift on a shared machine hits them alike.
 */
export const singleWriter: Benchmark = {
  name: "single-writer",
  title: "1. Single writer, conditional updates",
  needsServer: true,
  async run(ctx) {
    const url = ctx.server!.url;
    const ms = Math.round(1_000 * ctx.scale);
    const nc = await tcp(url);
    const seq = await openCounter(url, uniqueStream("SW_SEQ"), ctx.tmpDir);
    const flight = await openCounter(url, uniqueStream("SW_FLIGHT"), ctx.tmpDir);
    const raw = await rawStream(nc, uniqueStream("SW_RAW"));

    // Warm-up (JIT, server), and the size of one update entry as stored.
    const before = { ...seq.stats };
    await runLoops(1, Math.round(1_500 * ctx.scale), () => seq.update("increment", { by: 1 }));
    const entryBytes = Math.round(
      (seq.stats.bytesFetched - before.bytesFetched) /
        Math.max(1, seq.stats.entriesFetched - before.entriesFetched),
    );
    const data = payload(entryBytes);
    await rawConditionalLoop(raw.js, raw.subject, data, Math.round(1_500 * ctx.scale));
    await runLoops(IN_FLIGHT, Math.round(500 * ctx.scale), () =>
      flight.update("increment", { by: 1 }),
    );

    const rawRates: number[] = [];
    const seqRates: number[] = [];
    const flightRates: number[] = [];
    const flightBatch: number[] = [];
    const rawLat: number[] = [];
    const seqLat: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      ctx.progress(`round ${round + 1}/${ROUNDS}`);
      const r = await rawConditionalLoop(raw.js, raw.subject, data, ms, rawLat);
      rawRates.push((r.ops * 1000) / r.elapsedMs);

      const s = await runLoops(1, ms, async () => {
        const t = performance.now();
        await seq.update("increment", { by: 1 });
        seqLat.push(performance.now() - t);
      });
      seqRates.push((s.ops * 1000) / s.elapsedMs);

      const appends0 = flight.stats.appends;
      const f = await runLoops(IN_FLIGHT, ms, () => flight.update("increment", { by: 1 }));
      flightRates.push((f.ops * 1000) / f.elapsedMs);
      flightBatch.push(f.ops / Math.max(1, flight.stats.appends - appends0));
    }
    const conflicts = seq.stats.conflicts;
    const compactions = seq.stats.compactions;
    await seq.close();
    await flight.close();
    await nc.close();

    const rawRate = median(rawRates);
    const seqRate = median(seqRates);
    const flightRate = median(flightRates);
    // ratio of each segment to the raw segment just before it, then the median
    const seqRatio = median(seqRates.map((v, i) => v / rawRates[i]!));
    const flightRatio = median(flightRates.map((v, i) => v / rawRates[i]!));
    const us = (v: number) => num(v * 1000, 0);
    return {
      tables: [
        {
          title: `updates/s, median of ${ROUNDS} alternating runs of ${ms / 1000} s; entry ${entryBytes} B; ratio = median of per-run ratios`,
          table: {
            headers: ["", "updates/s", "vs raw", "p50 µs", "p99 µs"],
            rows: [
              [
                "raw js.publish, expected last sequence (reference)",
                num(rawRate),
                "1.00x",
                us(percentile(rawLat, 50)),
                us(percentile(rawLat, 99)),
              ],
              [
                "sync.update, awaited one at a time",
                num(seqRate),
                ratio(seqRatio),
                us(percentile(seqLat, 50)),
                us(percentile(seqLat, 99)),
              ],
              [
                `sync.update, ${IN_FLIGHT} in flight (mean ${num(median(flightBatch))} per append)`,
                num(flightRate),
                ratio(flightRatio),
                "",
                "",
              ],
            ],
          },
          note: `(the awaited writer also compacted ${compactions} times and conflicted ${conflicts} times with its own compactions)`,
        },
      ],
      summary: [
        {
          figure: "conditional updates/s, one writer, awaited",
          value: num(seqRate),
          reference: `${num(rawRate)} raw publish`,
          ratio: ratio(seqRatio),
        },
        {
          figure: `conditional updates/s, one writer, ${IN_FLIGHT} in flight`,
          value: num(flightRate),
          reference: `${num(rawRate)} raw publish`,
          ratio: ratio(flightRatio),
        },
      ],
      targets: [
        target(
          "conditional single-writer throughput / raw publish",
          seqRatio,
          ">=",
          0.85,
          `${num(seqRate)} / ${num(rawRate)} updates/s`,
        ),
      ],
      data: {
        entryBytes,
        ms,
        rawRates,
        seqRates,
        flightRates,
        flightBatch,
        inFlight: IN_FLIGHT,
        conflicts,
        compactions,
      },
    };
  },
};
