import { StringCodec, type KV, type NatsConnection } from "nats";
import { openCounter, tcp, type CounterSync } from "./lib/common.js";
import { num, ratio } from "./lib/format.js";
import { target, uniqueStream, type Benchmark } from "./lib/harness.js";
import { lineChart } from "./lib/svg.js";
import { max, mean, median, min, percentile } from "./lib/stats.js";

const WRITERS = [1, 2, 4, 8, 16];
const ROUNDS = 5;
const KEY = "counter";
const sc = StringCodec();

/** What one run of N sequential writers produced. */
interface RunResult {
  writers: number;
  elapsedMs: number;
  commits: number[];
  attempts: number[];
  latencies: number[];
}

interface Figures {
  goodput: number;
  attemptsMean: number;
  attemptsP99: number;
  p50: number;
  p99: number;
  /** Fewest / most commits of a writer, over its fair share (commits / writers). */
  fewestShare: number;
  mostShare: number;
}

function figures(runs: RunResult[]): Figures {
  const rate = (r: RunResult) => (r.commits.reduce((a, b) => a + b, 0) * 1000) / r.elapsedMs;
  const share = (r: RunResult, f: (v: number[]) => number) => {
    const total = r.commits.reduce((a, b) => a + b, 0);
    return f(r.commits) / (total / r.writers);
  };
  const attempts = runs.flatMap((r) => r.attempts);
  const latencies = runs.flatMap((r) => r.latencies);
  return {
    goodput: median(runs.map(rate)),
    attemptsMean: mean(attempts),
    attemptsP99: percentile(attempts, 99),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    // the worst run: fairness must hold in every run, not on average
    fewestShare: min(runs.map((r) => share(r, min))),
    mostShare: max(runs.map((r) => share(r, max))),
  };
}

/** N writers, each `await sync.update(...)` in a loop for `ms`. */
async function statesyncRun(
  url: string,
  tmpDir: string,
  writers: number,
  ms: number,
): Promise<RunResult> {
  const stream = uniqueStream(`CT${writers}`);
  const syncs: CounterSync[] = [];
  for (let i = 0; i < writers; i++) {
    syncs.push(
      await openCounter(url, stream, tmpDir, {
        clientId: `w${i}`,
        // BENCH_CONTENTION=turns measures the fair mode (see CreateSynchronizerOptions.contention)
        contention: process.env.BENCH_CONTENTION === "turns" ? "turns" : "retry",
      }),
    );
  }
  await Promise.all(syncs.map((s) => s.synced()));
  const result: RunResult = {
    writers,
    elapsedMs: 0,
    commits: syncs.map(() => 0),
    attempts: [],
    latencies: [],
  };
  let stop = false;
  const timer = setTimeout(() => (stop = true), ms);
  await Promise.all(
    syncs.map(async (sync, i) => {
      while (!stop) {
        const t = performance.now();
        const r = await sync.update("increment", { by: 1 });
        if (stop) break; // finished after the window: not counted
        result.latencies.push(performance.now() - t);
        result.attempts.push(r.attempts);
        result.commits[i]! += 1;
      }
    }),
  );
  result.elapsedMs = ms;
  clearTimeout(timer);
  await Promise.all(syncs.map((s) => s.close()));
  return result;
}

/** The same workload with NATS KV compare-and-set: get, compute, update(revision), retry. */
async function kvRun(admin: NatsConnection, url: string, writers: number, ms: number) {
  const bucket = uniqueStream(`KV${writers}`);
  const kv0 = await admin.jetstream().views.kv(bucket, { history: 1 });
  await kv0.put(KEY, sc.encode("0"));
  const conns: NatsConnection[] = [];
  const kvs: KV[] = [];
  for (let i = 0; i < writers; i++) {
    const nc = await tcp(url);
    conns.push(nc);
    kvs.push(await nc.jetstream().views.kv(bucket));
  }
  const result: RunResult = {
    writers,
    elapsedMs: ms,
    commits: kvs.map(() => 0),
    attempts: [],
    latencies: [],
  };
  let stop = false;
  const timer = setTimeout(() => (stop = true), ms);
  await Promise.all(
    kvs.map(async (kv, i) => {
      while (!stop) {
        const t = performance.now();
        let attempts = 0;
        for (;;) {
          attempts += 1;
          const e = await kv.get(KEY);
          const value = Number(sc.decode(e!.value)) + 1;
          try {
            await kv.update(KEY, sc.encode(String(value)), e!.revision);
            break;
          } catch (err) {
            if ((err as { api_error?: { err_code?: number } }).api_error?.err_code !== 10071) {
              throw err;
            }
          }
        }
        if (stop) break;
        result.latencies.push(performance.now() - t);
        result.attempts.push(attempts);
        result.commits[i]! += 1;
      }
    }),
  );
  clearTimeout(timer);
  const final = Number(sc.decode((await kv0.get(KEY))!.value));
  const counted = result.commits.reduce((a, b) => a + b, 0);
  if (final < counted) throw new Error(`KV lost updates: ${final} < ${counted}`);
  await Promise.all(conns.map((c) => c.close()));
  await (await admin.jetstreamManager()).streams.delete(`KV_${bucket}`);
  return result;
}

/**
 * 2. Contention: 1-16 writers on separate connections increment one counter with conditional
 * updates (each awaits its update before the next), against NATS KV compare-and-set.
 */
export const contention: Benchmark = {
  name: "contention",
  title: "2. Contention: N writers incrementing one state",
  needsServer: true,
  async run(ctx) {
    const url = ctx.server!.url;
    const ms = Math.round(2_000 * ctx.scale);
    const admin = await tcp(url);
    // warm-up
    await statesyncRun(url, ctx.tmpDir, 2, Math.round(1_000 * ctx.scale));
    await kvRun(admin, url, 2, Math.round(500 * ctx.scale));
    const runs = new Map<string, RunResult[]>();
    const push = (k: string, r: RunResult) => runs.set(k, [...(runs.get(k) ?? []), r]);
    for (let round = 0; round < ROUNDS; round++) {
      for (const n of WRITERS) {
        ctx.progress(`round ${round + 1}/${ROUNDS}, ${n} writer(s)`);
        push(`s${n}`, await statesyncRun(url, ctx.tmpDir, n, ms));
        push(`k${n}`, await kvRun(admin, url, n, ms));
      }
    }
    await admin.close();

    const s = new Map(WRITERS.map((n) => [n, figures(runs.get(`s${n}`)!)]));
    const k = new Map(WRITERS.map((n) => [n, figures(runs.get(`k${n}`)!)]));
    const row = (name: string, n: number, f: Figures, extra: string) => [
      name,
      String(n),
      num(f.goodput),
      extra,
      num(f.attemptsMean, 2),
      num(f.attemptsP99, 0),
      num(f.p50, 2),
      num(f.p99, 1),
      `${f.fewestShare.toFixed(2)} / ${f.mostShare.toFixed(2)}`,
    ];
    const rows: string[][] = [];
    for (const n of WRITERS) {
      rows.push(row("statesync", n, s.get(n)!, ratio(s.get(n)!.goodput / s.get(1)!.goodput)));
    }
    for (const n of WRITERS) {
      rows.push(row("NATS KV CAS", n, k.get(n)!, ratio(k.get(n)!.goodput / k.get(1)!.goodput)));
    }
    const s8 = s.get(8)!;
    const k8 = k.get(8)!;
    const s1 = s.get(1)!;
    return {
      tables: [
        {
          title: `median of ${ROUNDS} runs of ${ms / 1000} s per point; fairness from the worst run`,
          table: {
            headers: [
              "",
              "writers",
              "commits/s",
              "vs 1 writer",
              "attempts mean",
              "attempts p99",
              "p50 ms",
              "p99 ms",
              "fewest / most of fair share",
            ],
            rows,
          },
        },
        {
          title: "statesync over NATS KV (committed updates/s)",
          table: {
            headers: ["writers", "statesync", "NATS KV", "ratio"],
            rows: WRITERS.map((n) => [
              String(n),
              num(s.get(n)!.goodput),
              num(k.get(n)!.goodput),
              ratio(s.get(n)!.goodput / k.get(n)!.goodput),
            ]),
          },
        },
      ],
      summary: [
        {
          figure: "commits/s, 8 contending writers",
          value: num(s8.goodput),
          reference: `${num(k8.goodput)} NATS KV CAS`,
          ratio: ratio(s8.goodput / k8.goodput),
        },
        {
          figure: "8 writers vs 1 writer (goodput)",
          value: `${num(s8.goodput)} vs ${num(s1.goodput)}`,
          ratio: ratio(s8.goodput / s1.goodput),
        },
        {
          figure: "8 writers: fewest commits of a writer / fair share",
          value: s8.fewestShare.toFixed(2),
        },
        {
          figure: "8 writers: attempts per update mean / p99; latency p50 / p99",
          value: `${s8.attemptsMean.toFixed(2)} / ${s8.attemptsP99}; ${s8.p50.toFixed(1)} / ${s8.p99.toFixed(1)} ms`,
        },
      ],
      targets: [
        target(
          "goodput with 8 writers / single writer",
          s8.goodput / s1.goodput,
          ">=",
          0.7,
          `${num(s8.goodput)} / ${num(s1.goodput)} commits/s`,
        ),
        target(
          "8 writers: fewest commits / fair share",
          s8.fewestShare,
          ">=",
          0.5,
          "worst writer of the worst run",
        ),
        target(
          "goodput with 8 writers / NATS KV CAS",
          s8.goodput / k8.goodput,
          ">=",
          1.5,
          `${num(s8.goodput)} / ${num(k8.goodput)} commits/s`,
        ),
      ],
      data: {
        ms,
        statesync: Object.fromEntries(s),
        kv: Object.fromEntries(k),
        // commits per writer of every run (latencies and attempts are summarised above)
        commits: Object.fromEntries([...runs].map(([key, rs]) => [key, rs.map((r) => r.commits)])),
      },
      charts: [
        {
          file: "contention.svg",
          svg: lineChart({
            title: "Committed updates/s vs contending writers",
            xLabel: "writers (each awaits its update before the next)",
            yLabel: "committed updates/s",
            xLog: true,
            xTicks: WRITERS,
            series: [
              { name: "statesync", points: WRITERS.map((n) => [n, s.get(n)!.goodput]) },
              { name: "NATS KV CAS", points: WRITERS.map((n) => [n, k.get(n)!.goodput]) },
            ],
          }),
        },
      ],
    };
  },
};
