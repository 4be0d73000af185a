/**
 * 8. `fanout`: N live followers of one state on one nats-server (issue 13, docs/fanout.md). The
 * followers are full replicas spread over a few child processes (fanout-run.ts), each on its
 * own connection; one writer in this process makes 2 updates a second. Measured: the time from
 * the writer's `update()` until the last follower applied it, entries lost, convergence, server
 * CPU and memory, client memory per follower, and the time until every follower is live again
 * (and has the first update written after) after a server restart. Then the same with one
 * ordered consumer per follower, on a server of its own, capped in count and time.
 */
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { openJetStreamSynchronizer, startNatsServer, type NatsServer } from "@statesync/node";
import { connect } from "nats";
import type { FanoutChildParams } from "./fanout-run.js";
import { Child } from "./lib/child.js";
import { counterModel, type CounterSync } from "./lib/common.js";
import { num } from "./lib/format.js";
import { describeError, sleep, target, uniqueStream, type Benchmark } from "./lib/harness.js";
import { max, percentile } from "./lib/stats.js";

/** Updates per second of the one writer. */
const RATE = 2;
/** Updates before the measured ones (marks -1, -2, ...), not measured. */
const WARMUP = 4;
const wallMs = () => performance.timeOrigin + performance.now();

/** The figures of one path (fan-out or consumer per follower). */
export interface PathResult {
  via: "republish" | "consumer";
  websocket: boolean;
  asked: number;
  opened: number;
  failedToOpen: number;
  firstFailure?: string | undefined;
  openS: number;
  updates: number;
  latencies: number[];
  lost: number;
  converged: boolean;
  /** Distinct (revision, state hash) pairs over all followers at the end. */
  distinctStates: number;
  serverCpuPct: number;
  serverRssMiB: number;
  /** CPU of the follower processes in the window per entry applied by one follower, µs. */
  clientCpuUsPerEntry: number;
  /** The machine's 1-minute load average when the window started. */
  loadAverage: number;
  clientBytesPerFollower: number;
  /** From the restart until the server answers again, s. */
  restartServerS: number | undefined;
  /** From the restart until every follower is live again, s (undefined: not within the cap). */
  restartLiveS: number | undefined;
  /** From the restart until every follower applied an update written after it, s. */
  restartAppliedS: number | undefined;
  notes: string[];
}

/** What one path is asked to do. */
interface PathPlan {
  via: "republish" | "consumer";
  followers: number;
  seconds: number;
  /** Followers over WebSocket (`nats.ws`), as browsers connect. */
  websocket?: boolean;
  openCapMs: number;
  restartCapMs: number;
  /** `--cpu-prof`: profile the steady window of the first child into this file. */
  profileFile?: string;
  progress(message: string): void;
}

/**
 * The followers' reconnect jitter: 1 s, or 1 s per 2,000 followers, so that after a server
 * restart they come back at most about 2,000 a second (more at once could overflow the SYN and
 * accept queues, 2,048 and 4,096 on this machine, and a dropped connect is retried by TCP only
 * seconds later; not measured apart from the load of the machine).
 */
function reconnectJitterMs(followers: number): number {
  return Math.max(1_000, Math.round(followers / 2));
}

/** Soft file-descriptor limit of this process (inherited by the server and the children). */
function fileLimit(): number {
  try {
    const out = execFileSync("sh", ["-c", "ulimit -n"], { encoding: "utf8" }).trim();
    return out === "unlimited" ? Infinity : Number(out);
  } catch {
    return NaN;
  }
}

/** utime + stime of `pid` in clock ticks, and its resident memory in MiB. */
async function processUsage(pid: number): Promise<{ ticks: number; rssMiB: number }> {
  const stat = (await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ");
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return { ticks: Number(stat[11]) + Number(stat[12]), rssMiB: rssKiB / 1024 };
}
const TICKS_PER_S = 100;

/** Asks every child for something and collects the answers. */
async function ask<T>(children: Child[], type: string, timeoutMs = 60_000): Promise<T[]> {
  for (const c of children) c.send({ type });
  return Promise.all(children.map(async (c) => (await c.expect(type, timeoutMs)) as T));
}

type Status = { statuses: Record<string, number>; minMark: number };

/** Polls the children until `done(statuses)` or `capMs`; answers the ms it took, or undefined. */
async function until(
  children: Child[],
  done: (s: Status[]) => boolean,
  capMs: number,
  progress: (s: Status[]) => void,
): Promise<number | undefined> {
  const start = Date.now();
  let lastPrint = 0;
  for (;;) {
    const s = await ask<Status>(children, "status");
    if (done(s)) return Date.now() - start;
    if (Date.now() - start > capMs) return undefined;
    if (Date.now() - lastPrint > 5_000) {
      lastPrint = Date.now();
      progress(s);
    }
    await sleep(200);
  }
}

const sumStatus = (s: Status[], key: string) => s.reduce((n, x) => n + (x.statuses[key] ?? 0), 0);
const statusLine = (s: Status[]) => {
  const all: Record<string, number> = {};
  for (const x of s) for (const [k, n] of Object.entries(x.statuses)) all[k] = (all[k] ?? 0) + n;
  return Object.entries(all)
    .map(([k, n]) => `${n} ${k}`)
    .join(", ");
};
const minMark = (s: Status[]) => Math.min(...s.map((x) => x.minMark));

/** One path: its own server, writer, children; never throws for a part that fails. */
export async function runPath(plan: PathPlan): Promise<PathResult> {
  const say = (m: string) => plan.progress(`${plan.via}${plan.websocket ? " ws" : ""}: ${m}`);
  const notes: string[] = [];
  const server: NatsServer = await startNatsServer();
  const stream = uniqueStream("FANOUT");
  const children: Child[] = [];
  let writer: CounterSync | undefined;
  try {
    const writerNc = await connect({ servers: server.url, maxReconnectAttempts: -1 });
    writer = (await openJetStreamSynchronizer({
      connection: writerNc,
      closeConnection: () => writerNc.close(),
      stream,
      model: counterModel,
      snapshots: false,
      compaction: false,
      fanout: plan.via === "republish",
    })) as CounterSync;
    const processes = Math.min(8, Math.max(2, Math.ceil(plan.followers / 1500)));
    say(`opening ${plan.followers} followers in ${processes} processes`);
    const t0 = Date.now();
    for (let i = 0; i < processes; i++) {
      const count =
        Math.floor(plan.followers / processes) + (i < plan.followers % processes ? 1 : 0);
      const params: FanoutChildParams = {
        url: plan.websocket ? server.wsUrl : server.url,
        websocket: plan.websocket ?? false,
        stream,
        count,
        fanout: plan.via === "republish",
        openConcurrency: 8,
        openCapMs: plan.openCapMs,
        reconnectJitterMs: reconnectJitterMs(plan.followers),
      };
      children.push(Child.start("fanout-followers", params, { placement: "shared" }));
    }
    const opened = new Array<number>(processes).fill(0);
    let lastPrint = 0;
    const ready = await Promise.all(
      children.map(async (c, i) => {
        for (;;) {
          const m = await c.next(plan.openCapMs + 120_000);
          if (m.type === "ready") return m;
          opened[i] = Number(m.opened);
          if (Date.now() - lastPrint > 3_000) {
            lastPrint = Date.now();
            say(`opened ${opened.reduce((a, b) => a + b, 0)}/${plan.followers}`);
          }
        }
      }),
    );
    const openS = (Date.now() - t0) / 1000;
    const total = ready.reduce((n, m) => n + Number(m.opened), 0);
    const failedToOpen = ready.reduce((n, m) => n + Number(m.failed), 0);
    const firstFailure = ready.map((m) => m.firstFailure as string | undefined).find(Boolean);
    const clientBytes = ready.reduce((n, m) => n + Number(m.rssAfter) - Number(m.rssBefore), 0);
    say(`${total} followers open in ${num(openS, 1)} s (${failedToOpen} failed)`);

    // Warm-up (not measured): the first entries meet cold code paths in every process.
    for (let i = 1; i <= WARMUP; i++) {
      await writer.update("mark", { seq: -i });
      await sleep(1000 / RATE);
    }
    // Steady state: 2 updates a second.
    if (plan.profileFile) {
      children[0]!.send({ type: "profile-start" });
      await children[0]!.expect("profile-start");
    }
    const pid = server.pid!;
    const load = loadavg()[0]!;
    const c0 = await ask<{ us: number }>(children, "cpu");
    const u0 = await processUsage(pid);
    const w0 = Date.now();
    const sent = new Map<number, number>();
    const updates = Math.max(1, Math.round(plan.seconds * RATE));
    for (let seq = 1; seq <= updates; seq++) {
      const due = w0 + ((seq - 1) * 1000) / RATE;
      await sleep(Math.max(0, due - Date.now()));
      sent.set(seq, wallMs());
      await writer.update("mark", { seq });
      if (seq % (RATE * 10) === 0) say(`${seq}/${updates} updates`);
    }
    if (plan.profileFile) {
      children[0]!.send({ type: "profile-stop", file: plan.profileFile });
      await children[0]!.expect("profile-stop");
    }
    const convergedInMs = await until(
      children,
      (s) => minMark(s) >= updates,
      60_000,
      (s) => say(`waiting for the slowest follower: mark ${minMark(s)}/${updates}`),
    );
    const u1 = await processUsage(pid);
    const c1 = await ask<{ us: number }>(children, "cpu");
    const clientCpuUs = c1.reduce((n, c, i) => n + c.us - c0[i]!.us, 0);
    const windowS = (Date.now() - w0) / 1000;
    const reports = await ask<{ marks: Array<[number, number, number]>; hashes: object }>(
      children,
      "report",
    );
    const perMark = new Map<number, { count: number; last: number }>();
    for (const r of reports) {
      for (const [mark, count, last] of r.marks) {
        const p = perMark.get(mark) ?? { count: 0, last: 0 };
        p.count += count;
        p.last = Math.max(p.last, last);
        perMark.set(mark, p);
      }
    }
    const latencies: number[] = [];
    let lost = 0;
    for (const [seq, t] of sent) {
      const p = perMark.get(seq);
      lost += total - (p?.count ?? 0);
      if (p) latencies.push(p.last - t);
    }
    const hashes = new Map<string, number>();
    for (const r of reports) {
      for (const [h, n] of Object.entries(r.hashes)) hashes.set(h, (hashes.get(h) ?? 0) + n);
    }
    const writerHash = `${writer.revision}`;
    const converged =
      convergedInMs !== undefined &&
      hashes.size === 1 &&
      [...hashes.keys()][0]!.startsWith(`${writerHash}:`);
    if (convergedInMs === undefined) notes.push("not every follower reached the last update");

    // Server restart: until every follower is live again and has an update written after it.
    say("restarting the server");
    const r0 = Date.now();
    let restartLiveS: number | undefined;
    let restartAppliedS: number | undefined;
    let restartServerS: number | undefined;
    try {
      await server.restart();
      restartServerS = (Date.now() - r0) / 1000;
      say(`server up again after ${num(restartServerS, 1)} s`);
      const liveMs = await until(
        children,
        (s) => sumStatus(s, "live") === total,
        plan.restartCapMs,
        (s) => say(`after the restart: ${statusLine(s)}`),
      );
      if (liveMs !== undefined) restartLiveS = (Date.now() - r0) / 1000;
      else notes.push(`not every follower live within ${plan.restartCapMs / 1000} s of a restart`);
      const seq = updates + 1;
      for (let i = 0; ; i++) {
        try {
          await writer.update("mark", { seq });
          break;
        } catch (err) {
          if (Date.now() - r0 > plan.restartCapMs) throw err;
          await sleep(250);
        }
      }
      const appliedMs = await until(
        children,
        (s) => minMark(s) >= seq,
        Math.max(10_000, plan.restartCapMs - (Date.now() - r0)),
        (s) => say(`after the restart: slowest follower at mark ${minMark(s)}/${seq}`),
      );
      if (appliedMs !== undefined) restartAppliedS = (Date.now() - r0) / 1000;
    } catch (err) {
      notes.push(`restart: ${describeError(err)}`);
    }
    // What the server complained about (its last 500 log lines): slow consumers, errors.
    const log = server.output().split("\n");
    const slow = log.filter((l) => /slow consumer/i.test(l)).length;
    const errors = log.filter(
      (l) => /\[ERR\]|\[WRN\]/.test(l) && !/Websocket not configured/.test(l),
    );
    if (slow > 0) notes.push(`server log: ${slow} slow-consumer lines (of the last 500)`);
    if (errors.length > 0)
      notes.push(`server log: ${errors.length} [ERR]/[WRN] lines, last: ${errors.at(-1)}`);
    return {
      via: plan.via,
      websocket: plan.websocket ?? false,
      asked: plan.followers,
      opened: total,
      failedToOpen,
      firstFailure,
      openS,
      updates,
      latencies,
      lost,
      converged,
      distinctStates: hashes.size,
      serverCpuPct: (100 * (u1.ticks - u0.ticks)) / TICKS_PER_S / windowS,
      serverRssMiB: u1.rssMiB,
      clientCpuUsPerEntry: clientCpuUs / Math.max(1, total * updates),
      loadAverage: load,
      clientBytesPerFollower: total > 0 ? clientBytes / total : NaN,
      restartServerS,
      restartLiveS,
      restartAppliedS,
      notes,
    };
  } finally {
    for (const c of children) c.send({ type: "stop" });
    await Promise.all(
      children.map((c) => Promise.race([c.exited, sleep(30_000)]).then(() => c.kill())),
    );
    await writer?.close().catch(() => undefined);
    await server.stop().catch(() => undefined);
  }
}

/** The JSON line scripts read (the last line of the run). */
export function jsonLine(r: PathResult | undefined, followers: number): string {
  return JSON.stringify({
    followers: r?.opened ?? followers,
    p50Ms: r ? round(percentile(r.latencies, 50)) : null,
    p99Ms: r ? round(percentile(r.latencies, 99)) : null,
    maxMs: r ? round(max(r.latencies)) : null,
    lost: r?.lost ?? null,
    converged: r?.converged ?? false,
  });
}
const round = (v: number) => (Number.isFinite(v) ? Math.round(v * 10) / 10 : null);

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
      what: `250 fan-out followers in one process, ${r.updates} updates each (ops = entries applied)`,
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
    const limit = fileLimit();
    const need = followers + 200;
    if (!(limit >= need)) {
      throw new Error(
        `the file limit is ${limit}; ${followers} followers need about ${need}: run \`ulimit -n ${Math.min(20_000, need)}\` in the shell first (the hard limit here is ${execFileSync("sh", ["-c", "ulimit -Hn"], { encoding: "utf8" }).trim()})`,
      );
    }
    const openCapMs = Math.max(120_000, followers * 60);
    const paths: PathResult[] = [];
    const failures: string[] = [];
    const wsFollowers = ctx.flags["ws-followers"] ?? 0;
    for (const plan of [
      { via: "republish" as const, followers, seconds },
      { via: "republish" as const, followers: wsFollowers, seconds, websocket: true },
      { via: "consumer" as const, followers: consumers, seconds: Math.min(seconds, 20) },
    ]) {
      if (plan.followers <= 0) continue;
      try {
        paths.push(
          await runPath({
            ...plan,
            openCapMs: plan.via === "consumer" ? Math.min(openCapMs, 180_000) : openCapMs,
            restartCapMs: 120_000,
            progress: ctx.progress,
          }),
        );
      } catch (err) {
        const name = `${plan.via}${"websocket" in plan ? " ws" : ""}`;
        failures.push(`${name}: ${describeError(err)}`);
        ctx.progress(`${name} FAILED: ${describeError(err)}`);
      }
    }
    const fan = paths.find((p) => p.via === "republish" && !p.websocket);
    const rows = paths.map((p) => [
      p.via === "consumer"
        ? "consumer per follower"
        : p.websocket
          ? "fan-out, WebSocket (nats.ws)"
          : "fan-out (republish)",
      `${p.opened}/${p.asked}`,
      num(p.openS, 1),
      num(percentile(p.latencies, 50), 1),
      num(percentile(p.latencies, 99), 1),
      num(max(p.latencies), 1),
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
    ]);
    const notes = paths.flatMap((p) =>
      [...p.notes, ...(p.firstFailure ? [`first open failure: ${p.firstFailure}`] : [])].map(
        (n) => `${p.via}${p.websocket ? " ws" : ""}: ${n}`,
      ),
    );
    return {
      tables: [
        {
          title: `one writer, ${RATE} updates/s for ${seconds} s (consumer path: ${Math.min(seconds, 20)} s); ms from update() until the last follower applied it; followers reconnect with nats.js reconnectTimeWait 1 s and reconnectJitter ${reconnectJitterMs(followers) / 1000} s`,
          table: {
            headers: [
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
            ],
            rows,
          },
          note: notes.length > 0 ? notes.join("\n") : undefined,
        },
      ],
      summary: fan
        ? [
            {
              figure: `fan-out, ${fan.opened} followers: update to all applied p50 / p99 / max`,
              value: `${num(percentile(fan.latencies, 50), 1)} / ${num(percentile(fan.latencies, 99), 1)} / ${num(max(fan.latencies), 1)} ms`,
            },
          ]
        : [],
      targets: fan
        ? [
            target(
              `p99 update-to-all-applied at ${fan.opened} followers (ms)`,
              percentile(fan.latencies, 99),
              "<=",
              250,
              `${fan.latencies.length} updates`,
            ),
            target("entries lost", fan.lost, "<=", 0, `${fan.opened} followers`),
          ]
        : [],
      data: { followers, consumers, seconds, paths },
      failures,
      jsonLine: jsonLine(fan, followers),
    };
  },
};
