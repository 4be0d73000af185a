import { openCounter, openCounterWs, type CounterSync } from "./lib/common.js";
import { num } from "./lib/format.js";
import { sleep, uniqueStream, type Benchmark } from "./lib/harness.js";
import { lineChart } from "./lib/svg.js";
import { max, percentile } from "./lib/stats.js";

const UPDATES = 1_500;
const PACE_MS = 3;

/**
 * From `update()` called on one client to the new state delivered to a subscriber of another,
 * one update every few ms (not a saturation test). Both clients in this process (one clock).
 */
async function measure(writer: CounterSync, reader: CounterSync, count: number) {
  const sent = new Map<number, number>();
  const latencies: number[] = [];
  let seen = reader.state.mark;
  const start = seen;
  const unsubscribe = reader.subscribe((state) => {
    const t = performance.now();
    for (let m = seen + 1; m <= state.mark; m++) {
      const t0 = sent.get(m);
      if (t0 !== undefined) latencies.push(t - t0);
    }
    seen = Math.max(seen, state.mark);
  });
  const writes: number[] = [];
  for (let i = 1; i <= count; i++) {
    const seq = start + i;
    const t0 = performance.now();
    sent.set(seq, t0);
    await writer.update("mark", { seq });
    writes.push(performance.now() - t0);
    await sleep(PACE_MS);
  }
  await reader.waitFor(writer.revision);
  unsubscribe();
  return { latencies, writes };
}

/** 5. Propagation latency from an update on one client to its application on another. */
export const propagation: Benchmark = {
  name: "propagation",
  title: "5. Propagation latency, one client to another",
  needsServer: true,
  async run(ctx) {
    const server = ctx.server!;
    const count = Math.round(UPDATES * ctx.scale);
    const results: Record<string, { latencies: number[]; writes: number[] }> = {};
    for (const transport of ["TCP", "WebSocket"] as const) {
      ctx.progress(`${transport}: ${count} updates`);
      const stream = uniqueStream("PROP");
      const open = () =>
        transport === "TCP"
          ? openCounter(server.url, stream, ctx.tmpDir, { snapshots: false })
          : openCounterWs(server.wsUrl, stream);
      const writer = await open();
      const reader = await open();
      await measure(writer, reader, Math.round(100 * ctx.scale)); // warm-up
      results[transport] = await measure(writer, reader, count);
      await writer.close();
      await reader.close();
    }
    const rows = Object.entries(results).map(([t, r]) => [
      t,
      num(percentile(r.latencies, 50), 2),
      num(percentile(r.latencies, 99), 2),
      num(max(r.latencies), 1),
      num(percentile(r.writes, 50), 2),
      String(r.latencies.length),
    ]);
    const cdf = (values: number[]): Array<[number, number]> => {
      const s = [...values].sort((a, b) => a - b);
      const step = Math.max(1, Math.floor(s.length / 200));
      const pts: Array<[number, number]> = [];
      for (let i = 0; i < s.length; i += step) pts.push([s[i]!, (100 * (i + 1)) / s.length]);
      pts.push([s[s.length - 1]!, 100]);
      return pts;
    };
    const tcp = results.TCP!;
    const ws = results.WebSocket!;
    return {
      tables: [
        {
          title: `ms from update() on the writer to the subscriber of another client; ${count} updates, one every ${PACE_MS} ms`,
          table: {
            headers: [
              "transport",
              "p50 ms",
              "p99 ms",
              "max ms",
              "writer's update() p50 ms",
              "samples",
            ],
            rows,
          },
        },
      ],
      summary: [
        {
          figure: "propagation latency p50 / p99 / max, TCP",
          value: `${num(percentile(tcp.latencies, 50), 2)} / ${num(percentile(tcp.latencies, 99), 2)} / ${num(max(tcp.latencies), 1)} ms`,
        },
        {
          figure: "propagation latency p50 / p99 / max, WebSocket",
          value: `${num(percentile(ws.latencies, 50), 2)} / ${num(percentile(ws.latencies, 99), 2)} / ${num(max(ws.latencies), 1)} ms`,
        },
      ],
      targets: [],
      data: {
        count,
        paceMs: PACE_MS,
        percentiles: Object.fromEntries(
          Object.entries(results).map(([t, r]) => [
            t,
            {
              p50: percentile(r.latencies, 50),
              p90: percentile(r.latencies, 90),
              p99: percentile(r.latencies, 99),
              max: max(r.latencies),
            },
          ]),
        ),
      },
      charts: [
        {
          file: "propagation.svg",
          svg: lineChart({
            title: "Propagation latency (CDF)",
            xLabel: "ms from update() to the other client's subscriber (log scale)",
            yLabel: "% of updates",
            xLog: true,
            markers: false,
            series: [
              { name: "TCP", points: cdf(tcp.latencies) },
              { name: "WebSocket", points: cdf(ws.latencies) },
            ],
          }),
        },
      ],
    };
  },
};
