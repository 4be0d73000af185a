/**
 * One path of the `fanout` benchmark (issue 13, docs/fanout.md): N statesync followers of one
 * state, through fan-out (`republish`) or with one ordered consumer each (`consumer`), on a
 * nats-server of their own, spread over a few child processes (fanout-run.ts), each follower on
 * its own connection; one writer in this process makes 2 updates a second. Measured: the time
 * from the writer's `update()` until the last follower applied it, entries lost, convergence,
 * server CPU and memory, client CPU and memory per follower, and a server restart
 * (fanout-restart.ts).
 */
import { loadavg } from "node:os";
import { openJetStreamSynchronizer, startNatsServer, type NatsServer } from "@statesync/node";
import { connect } from "nats";
import {
  ask,
  latenciesOf,
  minMark,
  openChildren,
  RATE,
  stopChildren,
  until,
  warmUp,
  writeMarks,
  type Report,
} from "./fanout-children.js";
import { measureRestart, serverLogNotes, type RestartFigures } from "./fanout-restart.js";
import type { FanoutChildParams } from "./fanout-run.js";
import type { Child } from "./lib/child.js";
import { counterModel, type CounterSync } from "./lib/common.js";
import { uniqueStream } from "./lib/harness.js";
import { processUsage, TICKS_PER_S } from "./lib/proc-usage.js";

/** The figures of one path (fan-out or consumer per follower). */
export interface PathResult extends RestartFigures {
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
  notes: string[];
}

/** What one path is asked to do. */
export interface PathPlan {
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
export function reconnectJitterMs(followers: number): number {
  return Math.max(1_000, Math.round(followers / 2));
}

/** The writer of every path: a statesync replica on its own connection, fan-out as asked. */
export async function openWriter(
  server: NatsServer,
  stream: string,
  fanout: boolean,
): Promise<CounterSync> {
  const nc = await connect({ servers: server.url, maxReconnectAttempts: -1 });
  return (await openJetStreamSynchronizer({
    connection: nc,
    closeConnection: () => nc.close(),
    stream,
    model: counterModel,
    snapshots: false,
    compaction: false,
    fanout,
  })) as CounterSync;
}

/** One path: its own server, writer, children; never throws for a part that fails. */
export async function runPath(plan: PathPlan): Promise<PathResult> {
  const say = (m: string) => plan.progress(`${plan.via}${plan.websocket ? " ws" : ""}: ${m}`);
  const notes: string[] = [];
  const server: NatsServer = await startNatsServer();
  const stream = uniqueStream("FANOUT");
  const children: Child[] = [];
  let writer: CounterSync | undefined;
  try {
    writer = await openWriter(server, stream, plan.via === "republish");
    const params = (count: number): FanoutChildParams => ({
      url: plan.websocket ? server.wsUrl : server.url,
      websocket: plan.websocket ?? false,
      stream,
      count,
      fanout: plan.via === "republish",
      openConcurrency: 8,
      openCapMs: plan.openCapMs,
      reconnectJitterMs: reconnectJitterMs(plan.followers),
    });
    const open = await openChildren(
      "fanout-followers",
      plan.followers,
      params,
      plan.openCapMs,
      children,
      say,
    );
    const total = open.opened;
    await warmUp(writer);
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
    const updates = Math.max(1, Math.round(plan.seconds * RATE));
    const sent = await writeMarks(writer, updates, say);
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
    const reports = await ask<Report>(children, "report");
    const { latencies, lost } = latenciesOf(reports, sent, total);
    const hashes = new Map<string, number>();
    for (const r of reports) {
      for (const [h, n] of Object.entries(r.hashes)) hashes.set(h, (hashes.get(h) ?? 0) + n);
    }
    const converged =
      convergedInMs !== undefined &&
      hashes.size === 1 &&
      [...hashes.keys()][0]!.startsWith(`${writer.revision}:`);
    if (convergedInMs === undefined) notes.push("not every follower reached the last update");
    const restart = await measureRestart(
      server,
      writer,
      children,
      total,
      updates + 1,
      plan.restartCapMs,
      notes,
      say,
    );
    notes.push(...serverLogNotes(server));
    return {
      via: plan.via,
      websocket: plan.websocket ?? false,
      asked: plan.followers,
      opened: total,
      failedToOpen: open.failedToOpen,
      firstFailure: open.firstFailure,
      openS: open.openS,
      updates,
      latencies,
      lost,
      converged,
      distinctStates: hashes.size,
      serverCpuPct: (100 * (u1.ticks - u0.ticks)) / TICKS_PER_S / windowS,
      serverRssMiB: u1.rssMiB,
      clientCpuUsPerEntry: clientCpuUs / Math.max(1, total * updates),
      loadAverage: load,
      clientBytesPerFollower: total > 0 ? open.clientBytes / total : NaN,
      ...restart,
      notes,
    };
  } finally {
    await stopChildren(children);
    await writer?.close().catch(() => undefined);
    await server.stop().catch(() => undefined);
  }
}
