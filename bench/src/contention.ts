import { join } from "node:path";
import {
  contentionMode,
  writersRound,
  type RoundResult,
  type WriterMode,
} from "./contention-run.js";
import { runInChild } from "./lib/child.js";
import { num, ratio } from "./lib/format.js";
import { describeError, target, type Benchmark, type Target } from "./lib/harness.js";
import {
  acrossPlacements,
  canPin,
  countingPlacement,
  startServer,
  type Placement,
} from "./lib/placement.js";
import { lineChart } from "./lib/svg.js";
import { max, mean, median, min, percentile } from "./lib/stats.js";

/** Writer counts of the rounds, per server placement. */
const PLAN: Record<Placement, { rounds: number; oneProcess: number[]; processes: number[] }> = {
  // the figures that count: every writer count in both writer modes, 32 included
  pinned: { rounds: 2, oneProcess: [1, 2, 4, 8, 32], processes: [2, 4, 8, 32] },
  // the comparison with the old placement: goodput at 1 and 8 writers
  shared: { rounds: 1, oneProcess: [1, 8], processes: [8] },
};
const SECONDS = 10;
const KV_WRITERS = [1, 8];
const OCCASIONAL = { writers: 32, everyMs: 1_000, seconds: 20 };
/** Writer counts judged for starvation (32 is judged on RETRY_LIMIT only). */
const JUDGED = [2, 4, 8];

/** The figures of one round. */
interface Round {
  placement: Placement;
  mode: WriterMode | "NATS KV";
  writers: number;
  round: number;
  goodput: number;
  fewestShare: number;
  mostShare: number;
  attemptsMean: number;
  attemptsMax: number;
  retryLimit: number;
  otherErrors: Record<string, number>;
  p50: number;
  p99: number;
  commits: number[];
}

function figures(r: RoundResult, meta: Pick<Round, "placement" | "mode" | "round">): Round {
  const commits = r.perWriter.map((w) => w.commits);
  const total = commits.reduce((a, b) => a + b, 0);
  const fair = total / r.writers;
  const attempts = r.perWriter.flatMap((w) => w.attempts);
  const latencies = r.perWriter.flatMap((w) => w.latencies);
  const otherErrors: Record<string, number> = {};
  for (const w of r.perWriter) {
    for (const [k, v] of Object.entries(w.errors)) otherErrors[k] = (otherErrors[k] ?? 0) + v;
  }
  return {
    ...meta,
    writers: r.writers,
    goodput: (total * 1000) / r.ms,
    fewestShare: fair > 0 ? min(commits) / fair : 0,
    mostShare: fair > 0 ? max(commits) / fair : 0,
    attemptsMean: mean(attempts),
    attemptsMax: attempts.length > 0 ? max(attempts) : 0,
    retryLimit: r.perWriter.reduce((a, w) => a + w.retryLimit, 0),
    otherErrors,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    commits,
  };
}

const errorsText = (e: Record<string, number>) =>
  Object.entries(e)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");

/**
 * 2. Contention: N writers on one stream, each awaiting each conditional increment of one
 * counter, all in one client process and each in its own; per round the commits per writer,
 * the most attempts any commit took, RETRY_LIMIT failures and latency; NATS KV compare-and-set
 * as the reference; and 32 occasional writers (one update a second each).
 */
export const contention: Benchmark = {
  name: "contention",
  title: "2. Contention: N writers incrementing one state",
  needsServer: false,
  async run(ctx) {
    const ms = Math.round(SECONDS * 1_000 * ctx.scale);
    const rounds: Round[] = [];
    const failures: string[] = [];
    const occasional: Round[] = [];
    const attempt = async (what: string, fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        const message = describeError(err);
        ctx.progress(`${what}: FAILED: ${message}`);
        failures.push(`${what}: ${message}`);
      }
    };
    const measured = await acrossPlacements(ctx.progress, async (placement, server) => {
      const plan = PLAN[placement];
      const tmp = join(ctx.tmpDir, placement);
      const totalRounds = ctx.scale < 1 ? 1 : plan.rounds;
      for (let round = 1; round <= totalRounds; round++) {
        const jobs: Array<[WriterMode, number]> = [
          ...plan.oneProcess.map((n) => ["one process", n] as [WriterMode, number]),
          ...plan.processes.map((n) => ["processes", n] as [WriterMode, number]),
        ].sort((a, b) => a[1] - b[1]);
        for (const [mode, n] of jobs) {
          const what = `${placement}, round ${round}, ${n} writer(s) in ${mode}`;
          ctx.progress(what);
          await attempt(what, async () => {
            const r = await writersRound(placement, mode, server.url, tmp, n, ms);
            rounds.push(figures(r, { placement, mode, round }));
          });
        }
        if (placement === "pinned") {
          for (const n of KV_WRITERS) {
            const what = `${placement}, round ${round}, NATS KV with ${n} writer(s)`;
            ctx.progress(what);
            await attempt(what, async () => {
              const r = await runInChild<RoundResult>(
                "contention-kv",
                { url: server.url, writers: n, ms: Math.round(ms / 2) },
                { placement },
              );
              rounds.push(figures(r, { placement, mode: "NATS KV", round }));
            });
          }
        }
      }
      const modes: WriterMode[] = ["one process", "processes"];
      for (const mode of placement === "pinned" || !canPin() ? modes : []) {
        const what = `${placement}, ${OCCASIONAL.writers} occasional writers in ${mode}`;
        ctx.progress(what);
        await attempt(what, async () => {
          const r = await writersRound(
            placement,
            mode,
            server.url,
            tmp,
            OCCASIONAL.writers,
            Math.round(OCCASIONAL.seconds * 1_000 * Math.max(ctx.scale, 0.5)),
            { everyMs: OCCASIONAL.everyMs },
          );
          occasional.push(figures(r, { placement, mode, round: 1 }));
        });
      }
    });
    failures.unshift(...measured.failures);
    const counting = measured.counting;
    return report(rounds, occasional, counting, ms, failures);
  },
  async profile(ctx) {
    const placement = countingPlacement();
    const server = await startServer(placement);
    try {
      const file = join(ctx.dir, "contention.cpuprofile");
      const ms = Math.round(SECONDS * 1_000 * ctx.scale);
      const r = await writersRound(placement, "one process", server.url, ctx.tmpDir, 8, ms, {
        profileFile: file,
      });
      const ops = r.perWriter.reduce((a, w) => a + w.commits, 0);
      return { what: "8 writers in one process, commits", ops, windowMs: ms, file };
    } finally {
      await server.stop();
    }
  },
};

function report(
  rounds: Round[],
  occasional: Round[],
  counting: Placement,
  ms: number,
  failures: string[],
) {
  const of = (p: Placement, mode: Round["mode"], n: number) =>
    rounds.filter((r) => r.placement === p && r.mode === mode && r.writers === n);
  const goodput = (p: Placement, mode: Round["mode"], n: number) =>
    median(of(p, mode, n).map((r) => r.goodput));
  const one = (p: Placement) => goodput(p, "one process", 1);
  const rows = rounds.map((r) => [
    r.placement,
    r.mode,
    String(r.writers),
    String(r.round),
    num(r.goodput),
    r.mode === "NATS KV"
      ? ratio(r.goodput / goodput(r.placement, "NATS KV", 1))
      : ratio(r.goodput / one(r.placement)),
    `${r.fewestShare.toFixed(2)} / ${r.mostShare.toFixed(2)}`,
    num(r.attemptsMean, 2),
    String(r.attemptsMax),
    String(r.retryLimit),
    errorsText(r.otherErrors) || "0",
    num(r.p50, 2),
    num(r.p99, 1),
  ]);
  const judged = rounds.filter((r) => r.mode !== "NATS KV" && JUDGED.includes(r.writers));
  const big = rounds.filter((r) => r.mode !== "NATS KV" && r.writers === 32);
  const worstAttempts = max(judged.map((r) => r.attemptsMax));
  const retryLimits = judged.reduce((a, r) => a + r.retryLimit, 0);
  const worstFewest = min(judged.map((r) => r.fewestShare));
  const worstRound = judged.find((r) => r.fewestShare === worstFewest);
  const bigRetry = big.reduce((a, r) => a + r.retryLimit, 0);
  const targets: Target[] = [];
  const summary = [];
  for (const mode of ["one process", "processes"] as const) {
    const g8 = goodput(counting, mode, 8);
    const g1 = one(counting);
    if (!Number.isFinite(g8) || !Number.isFinite(g1)) continue;
    // The target is on one process, as it was set; writers in processes share the client core
    // in the pinned placement, so their goodput is shown, not judged.
    if (mode === "one process") {
      targets.push(
        target(
          `goodput 8 writers / 1 writer (${counting}, ${mode})`,
          g8 / g1,
          ">=",
          0.7,
          `${num(g8)} / ${num(g1)} commits/s, median of rounds`,
        ),
      );
    }
    summary.push({
      figure: `commits/s, 8 writers in ${mode} vs 1 writer (${counting})`,
      value: `${num(g8)} vs ${num(g1)}`,
      ratio: ratio(g8 / g1),
    });
  }
  if (judged.length > 0) {
    const where = worstRound
      ? `worst: ${worstRound.placement}, ${worstRound.writers} writers in ${worstRound.mode}, round ${worstRound.round}`
      : "";
    targets.push(
      target(
        "most attempts of one commit, 2-8 writers, every round",
        worstAttempts,
        "<=",
        16,
        "both writer modes, every placement",
      ),
      target("RETRY_LIMIT failures, 2-8 writers", retryLimits, "<=", 0, `${judged.length} rounds`),
      target("fewest commits of a writer / fair share, worst round", worstFewest, ">=", 0.5, where),
    );
    summary.push({
      figure: "2-8 writers, worst round: fewest / fair share; most attempts; RETRY_LIMIT",
      value: `${worstFewest.toFixed(2)}; ${worstAttempts}; ${retryLimits}`,
    });
  }
  if (big.length > 0) {
    targets.push(
      target("RETRY_LIMIT failures, 32 writers", bigRetry, "<=", 0, `${big.length} rounds`),
    );
    const worst = big.reduce((a, b) => (b.p99 > a.p99 ? b : a));
    summary.push({
      figure: "32 busy writers, worst round: RETRY_LIMIT; most attempts; p99 latency",
      value: `${bigRetry}; ${max(big.map((r) => r.attemptsMax))}; ${num(worst.p99)} ms`,
    });
  }
  const kv8 = goodput(counting, "NATS KV", 8);
  const s8 = goodput(counting, "one process", 8);
  if (Number.isFinite(kv8) && Number.isFinite(s8)) {
    targets.push(
      target(
        `goodput 8 writers / NATS KV CAS (${counting})`,
        s8 / kv8,
        ">=",
        1.5,
        `${num(s8)} / ${num(kv8)} commits/s`,
      ),
    );
    summary.push({
      figure: `commits/s, 8 writers in one process (${counting})`,
      value: num(s8),
      reference: `${num(kv8)} NATS KV CAS`,
      ratio: ratio(s8 / kv8),
    });
  }
  const tables = [
    {
      title: `every round (${ms / 1000} s each, a fresh stream; contention "${contentionMode()}"); vs 1 writer = this round's commits/s over the median of 1 writer's; latency of commits`,
      table: {
        headers: [
          "placement",
          "writers in",
          "N",
          "round",
          "commits/s",
          "vs 1 writer",
          "fewest / most of fair share",
          "attempts mean",
          "attempts max",
          "RETRY_LIMIT",
          "other failures",
          "p50 ms",
          "p99 ms",
        ],
        rows,
        left: 2,
      },
    },
  ];
  if (occasional.length > 0) {
    const updates = (o: Round) => o.commits.reduce((x, y) => x + y, 0);
    tables.push({
      title: `${OCCASIONAL.writers} occasional writers, one update a second each (${occasional[0]!.placement})`,
      table: {
        headers: [
          "writers in",
          "updates",
          "p50 ms",
          "p99 ms",
          "attempts max",
          "RETRY_LIMIT",
          "other failures",
        ],
        rows: occasional.map((o) => [
          o.mode,
          String(updates(o)),
          num(o.p50, 2),
          num(o.p99, 1),
          String(o.attemptsMax),
          String(o.retryLimit),
          errorsText(o.otherErrors) || "0",
        ]),
        left: 1,
      },
    });
    for (const o of occasional) {
      targets.push(
        target(
          `p99 latency of ${o.writers} occasional writers in ${o.mode}, ms`,
          o.p99,
          "<=",
          1000,
          `${updates(o)} updates, ${o.placement}`,
        ),
      );
      summary.push({
        figure: `${o.writers} occasional writers (1/s each) in ${o.mode}: p50 / p99 latency`,
        value: `${num(o.p50, 1)} / ${num(o.p99)} ms`,
      });
    }
  }
  const series = (mode: Round["mode"], name: string) => {
    const ns = [
      ...new Set(
        rounds.filter((r) => r.placement === counting && r.mode === mode).map((r) => r.writers),
      ),
    ].sort((a, b) => a - b);
    return { name, points: ns.map((n) => [n, goodput(counting, mode, n)] as [number, number]) };
  };
  const allNs = [...new Set(rounds.map((r) => r.writers))].sort((a, b) => a - b);
  return {
    tables,
    summary,
    targets,
    failures,
    data: { ms, contention: contentionMode(), rounds, occasional },
    charts: [
      {
        file: "contention.svg",
        svg: lineChart({
          title: `Committed updates/s vs contending writers (${counting})`,
          xLabel: "writers (each awaits its update before the next)",
          yLabel: "committed updates/s",
          xLog: true,
          xTicks: allNs,
          series: [
            series("one process", "statesync, one process"),
            series("processes", "statesync, a process each"),
            { ...series("NATS KV", "NATS KV CAS"), dashed: true },
          ].filter((s) => s.points.length > 0),
        }),
      },
    ],
  };
}
