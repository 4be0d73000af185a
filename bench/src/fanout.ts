/**
 * 8. `fanout`: N live followers of one state on one nats-server (issue 13, docs/fanout.md). The
 * paths, each on a server of its own, one after the other: statesync fan-out followers
 * (fanout-path.ts), the raw reference of as many plain core subscribers (fanout-raw.ts, the
 * floor this machine imposes), optionally fan-out followers over WebSocket, and one ordered
 * consumer per follower, capped in count and time. Prints one table of all paths, one of
 * statesync against the raw floor, the targets (p99 ≤ 250 ms, nothing lost) and a JSON line.
 */
import { RATE } from "./fanout-children.js";
import { reconnectJitterMs, runPath, type PathResult } from "./fanout-path.js";
import { runRawPath, type RawResult } from "./fanout-raw.js";
import { num } from "./lib/format.js";
import { describeError, target, type Benchmark } from "./lib/harness.js";
import { fileLimit } from "./lib/proc-usage.js";
import { max, percentile } from "./lib/stats.js";

/** The JSON line scripts read (the last line of the run); `raw*`: the raw floor (null: none). */
export function jsonLine(
  r: PathResult | undefined,
  followers: number,
  raw?: RawResult | undefined,
): string {
  return JSON.stringify({
    followers: r?.opened ?? followers,
    p50Ms: r ? round(percentile(r.latencies, 50)) : null,
    p99Ms: r ? round(percentile(r.latencies, 99)) : null,
    maxMs: r ? round(max(r.latencies)) : null,
    lost: r?.lost ?? null,
    converged: r?.converged ?? false,
    rawP50Ms: raw ? round(percentile(raw.latencies, 50)) : null,
    rawP99Ms: raw ? round(percentile(raw.latencies, 99)) : null,
    rawMaxMs: raw ? round(max(raw.latencies)) : null,
  });
}
const round = (v: number) => (Number.isFinite(v) ? Math.round(v * 10) / 10 : null);

/** p50 / p99 / max of `latencies`, ms. */
const spread = (latencies: number[]) => [
  percentile(latencies, 50),
  percentile(latencies, 99),
  max(latencies),
];

/** A row of the table of all paths. */
function pathRow(p: PathResult): string[] {
  const name =
    p.via === "consumer"
      ? "consumer per follower"
      : p.websocket
        ? "fan-out, WebSocket (nats.ws)"
        : "fan-out (republish)";
  return [
    name,
    `${p.opened}/${p.asked}`,
    num(p.openS, 1),
    ...spread(p.latencies).map((v) => num(v, 1)),
    String(p.lost),
    p.converged ? "yes" : `no (${p.distinctStates} states)`,
    num(p.serverCpuPct, 0),
    num(p.serverRssMiB, 0),
    num(p.clientBytesPerFollower / 1024, 0),
    num(p.clientCpuUsPerEntry, 0),
    num(p.loadAverage, 1),
    p.restartServerS === undefined ? "-" : num(p.restartServerS, 1),
    p.restartLiveS === undefined ? "over cap" : num(p.restartLiveS, 1),
    p.restartAppliedS === undefined ? "over cap" : num(p.restartAppliedS, 1),
  ];
}

/** The raw reference's row of the same table (no state, no restart). */
function rawRow(r: RawResult): string[] {
  return [
    "raw nats.js subscribers (floor)",
    `${r.opened}/${r.asked}`,
    num(r.openS, 1),
    ...spread(r.latencies).map((v) => num(v, 1)),
    String(r.lost),
    "-",
    num(r.serverCpuPct, 0),
    num(r.serverRssMiB, 0),
    num(r.clientBytesPerFollower / 1024, 0),
    num(r.clientCpuUsPerEntry, 0),
    num(r.loadAverage, 1),
    "-",
    "-",
    "-",
  ];
}

const HEADERS = [
  "path",
  "followers",
  "open s",
  "p50 ms",
  "p99 ms",
  "max ms",
  "lost",
  "converged",
  "server CPU %",
  "server RSS MiB",
  "client KiB/follower",
  "client CPU µs/entry/follower",
  "load avg",
  "restart: server up s",
  "restart: all live s",
  "restart: next update applied s",
];

/** The benchmark (`npm run bench -- fanout --followers N [--consumers M] [--seconds S]`). */
export const fanout: Benchmark = {
  name: "fanout",
  title: "8. Fan-out: N live followers of one state, one writer at 2 updates/s",
  needsServer: false,
  async profile(ctx) {
    // The followers' side: 2 child processes of 250 followers each, the first one profiled.
    const file = `${ctx.dir}/fanout-followers.cpuprofile`;
    const seconds = Math.max(5, Math.round(15 * ctx.scale));
    const t0 = Date.now();
    const r = await runPath({
      via: "republish",
      followers: 500,
      seconds,
      openCapMs: 120_000,
      restartCapMs: 30_000,
      profileFile: file,
      progress: ctx.progress,
    });
    return {
      // process.cpuUsage of both children over the window: CPU time actually run, which a
      // loaded machine inflates less than the profile's busy time (sampled on the wall clock).
      what: `250 fan-out followers in one process, ${r.updates} updates each (ops = entries applied); process CPU of the follower children: ${num(r.clientCpuUsPerEntry, 1)} µs per entry per follower`,
      ops: 250 * r.updates,
      file,
      windowMs: Math.min(Date.now() - t0, seconds * 1000),
    };
  },
  failedJsonLine: (flags) => jsonLine(undefined, flags.followers ?? 200),
  async run(ctx) {
    const followers = ctx.flags.followers ?? 200;
    const consumers = ctx.flags.consumers ?? Math.min(followers, 500);
    const seconds = ctx.flags.seconds ?? Math.max(10, Math.round(30 * ctx.scale));
    const withRaw = (ctx.flags.raw ?? 1) !== 0;
    const limit = fileLimit();
    const need = followers + 200;
    if (!(limit >= need)) {
      throw new Error(
        `the file limit is ${limit}; ${followers} followers need about ${need}: run \`ulimit -n ${Math.min(20_000, need)}\` in the shell first (the hard limit here is ${fileLimit(true)})`,
      );
    }
    const openCapMs = Math.max(120_000, followers * 60);
    const paths: PathResult[] = [];
    let raw: RawResult | undefined;
    const failures: string[] = [];
    const fail = (name: string, err: unknown) => {
      failures.push(`${name}: ${describeError(err)}`);
      ctx.progress(`${name} FAILED: ${describeError(err)}`);
    };
    const wsFollowers = ctx.flags["ws-followers"] ?? 0;
    for (const plan of [
      { via: "republish" as const, followers, seconds },
      { via: "raw" as const, followers: withRaw ? followers : 0, seconds },
      { via: "republish" as const, followers: wsFollowers, seconds, websocket: true },
      { via: "consumer" as const, followers: consumers, seconds: Math.min(seconds, 20) },
    ]) {
      if (plan.followers <= 0) continue;
      const name = `${plan.via}${"websocket" in plan ? " ws" : ""}`;
      try {
        if (plan.via === "raw") {
          raw = await runRawPath({ ...plan, openCapMs, progress: ctx.progress });
          continue;
        }
        paths.push(
          await runPath({
            ...plan,
            via: plan.via,
            openCapMs: plan.via === "consumer" ? Math.min(openCapMs, 180_000) : openCapMs,
            restartCapMs: 120_000,
            progress: ctx.progress,
          }),
        );
      } catch (err) {
        fail(name, err);
      }
    }
    const fan = paths.find((p) => p.via === "republish" && !p.websocket);
    const rows = paths.map(pathRow);
    if (raw) rows.splice(fan ? 1 : 0, 0, rawRow(raw));
    const notes = [
      ...paths.flatMap((p) =>
        [...p.notes, ...(p.firstFailure ? [`first open failure: ${p.firstFailure}`] : [])].map(
          (n) => `${p.via}${p.websocket ? " ws" : ""}: ${n}`,
        ),
      ),
      ...(raw?.notes ?? []).map((n) => `raw: ${n}`),
      ...(raw?.firstFailure ? [`raw: first open failure: ${raw.firstFailure}`] : []),
    ];
    const tables = [
      {
        title: `one writer, ${RATE} updates/s for ${seconds} s (consumer path: ${Math.min(seconds, 20)} s); ms from update() until the last follower applied it (raw: got it); followers reconnect with nats.js reconnectTimeWait 1 s and reconnectJitter ${reconnectJitterMs(followers) / 1000} s`,
        table: { headers: HEADERS, rows },
        note: notes.length > 0 ? notes.join("\n") : undefined,
      },
    ];
    if (fan && raw) {
      const [s, r] = [spread(fan.latencies), spread(raw.latencies)];
      tables.push({
        title:
          "statesync fan-out against the raw floor (plain core subscribers, same count, same processes, same writer), ms from update() to the last receipt",
        table: {
          headers: ["", "p50 ms", "p99 ms", "max ms", "client CPU µs/entry/follower"],
          rows: [
            ["raw floor", ...r.map((v) => num(v, 1)), num(raw.clientCpuUsPerEntry, 1)],
            ["statesync", ...s.map((v) => num(v, 1)), num(fan.clientCpuUsPerEntry, 1)],
            [
              "statesync / raw",
              ...s.map((v, i) => `${num(v / r[i]!, 2)}×`),
              `${num(fan.clientCpuUsPerEntry / raw.clientCpuUsPerEntry, 2)}×`,
            ],
          ],
        },
        note: undefined,
      });
    }
    const summary = [];
    if (fan) {
      summary.push({
        figure: `fan-out, ${fan.opened} followers: update to all applied p50 / p99 / max`,
        value: spread(fan.latencies)
          .map((v) => num(v, 1))
          .join(" / ")
          .concat(" ms"),
      });
    }
    if (raw) {
      summary.push({
        figure: `raw floor, ${raw.opened} plain subscribers: update to all received p50 / p99 / max`,
        value: spread(raw.latencies)
          .map((v) => num(v, 1))
          .join(" / ")
          .concat(" ms"),
      });
    }
    return {
      tables,
      summary,
      targets: fan
        ? [
            target(
              `p99 update-to-all-applied at ${fan.opened} followers (ms)`,
              percentile(fan.latencies, 99),
              "<=",
              250,
              `${fan.latencies.length} updates${raw ? `; raw floor p99 ${num(percentile(raw.latencies, 99), 1)} ms` : ""}`,
            ),
            target("entries lost", fan.lost, "<=", 0, `${fan.opened} followers`),
          ]
        : [],
      data: { followers, consumers, seconds, paths, raw },
      failures,
      jsonLine: jsonLine(fan, followers, raw),
    };
  },
};
