/**
 * The raw reference of the `fanout` benchmark: the floor this machine imposes on a fan-out.
 * As many plain nats.js core subscribers as the statesync path has followers, one connection
 * each, spread over as many child processes (fanout-raw-run.ts), on the republish subject of
 * the same kind of state, on a nats-server of their own, with the same writer (a statesync
 * replica with fan-out) at the same rate. A subscriber does no work but note when a message
 * arrived, so the time from the writer's `update()` until the last subscriber got the entry is
 * what the server, nats.js and the shared cores cost without statesync's follow path; the
 * statesync figures divided by these are statesync's share.
 */
import { loadavg } from "node:os";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { connect } from "nats";
import {
  ask,
  latenciesOf,
  minMark,
  openChildren,
  RATE,
  stopChildren,
  until,
  WARMUP,
  warmUp,
  writeMarks,
  type Report,
} from "./fanout-children.js";
import { openWriter } from "./fanout-path.js";
import { serverLogNotes } from "./fanout-restart.js";
import type { RawChildParams } from "./fanout-raw-run.js";
import type { Child } from "./lib/child.js";
import type { CounterSync } from "./lib/common.js";
import { uniqueStream } from "./lib/harness.js";
import { processUsage, TICKS_PER_S } from "./lib/proc-usage.js";

/** The figures of the raw reference. */
export interface RawResult {
  asked: number;
  opened: number;
  failedToOpen: number;
  firstFailure?: string | undefined;
  openS: number;
  updates: number;
  /** Per update, ms from `update()` until the last subscriber got it. */
  latencies: number[];
  /** Receipts missing (subscribers × updates − receipts). */
  lost: number;
  serverCpuPct: number;
  serverRssMiB: number;
  /** CPU of the subscriber processes in the window per message to one subscriber, µs. */
  clientCpuUsPerEntry: number;
  loadAverage: number;
  clientBytesPerFollower: number;
  notes: string[];
}

/** The republish destination of `stream` (the subject the fan-out followers subscribe to). */
async function republishSubject(server: NatsServer, stream: string): Promise<string> {
  const nc = await connect({ servers: server.url });
  try {
    const info = await (await nc.jetstreamManager()).streams.info(stream);
    const dest = info.config.republish?.dest;
    if (!dest) throw new Error(`stream ${stream} has no republish rule`);
    return dest;
  } finally {
    await nc.close();
  }
}

/** The raw reference at `followers` subscribers for `seconds`; throws when it cannot run. */
export async function runRawPath(plan: {
  followers: number;
  seconds: number;
  openCapMs: number;
  progress(message: string): void;
}): Promise<RawResult> {
  const say = (m: string) => plan.progress(`raw: ${m}`);
  const notes: string[] = [];
  const server = await startNatsServer();
  const stream = uniqueStream("FANRAW");
  const children: Child[] = [];
  let writer: CounterSync | undefined;
  try {
    writer = await openWriter(server, stream, true);
    const subject = await republishSubject(server, stream);
    const params = (count: number): RawChildParams => ({
      url: server.url,
      subject,
      count,
      warmup: WARMUP,
      openConcurrency: 8,
      openCapMs: plan.openCapMs,
    });
    const open = await openChildren(
      "fanout-raw",
      plan.followers,
      params,
      plan.openCapMs,
      children,
      say,
    );
    await warmUp(writer);
    const pid = server.pid!;
    const load = loadavg()[0]!;
    const c0 = await ask<{ us: number }>(children, "cpu");
    const u0 = await processUsage(pid);
    const w0 = Date.now();
    const updates = Math.max(1, Math.round(plan.seconds * RATE));
    const sent = await writeMarks(writer, updates, say);
    const doneMs = await until(
      children,
      (s) => minMark(s) >= updates,
      60_000,
      (s) => say(`waiting for the slowest subscriber: mark ${minMark(s)}/${updates}`),
    );
    if (doneMs === undefined) notes.push("not every subscriber got the last update");
    const u1 = await processUsage(pid);
    const c1 = await ask<{ us: number }>(children, "cpu");
    const windowS = (Date.now() - w0) / 1000;
    const clientCpuUs = c1.reduce((n, c, i) => n + c.us - c0[i]!.us, 0);
    const { latencies, lost } = latenciesOf(
      await ask<Report>(children, "report"),
      sent,
      open.opened,
    );
    notes.push(...serverLogNotes(server));
    return {
      asked: plan.followers,
      opened: open.opened,
      failedToOpen: open.failedToOpen,
      firstFailure: open.firstFailure,
      openS: open.openS,
      updates,
      latencies,
      lost,
      serverCpuPct: (100 * (u1.ticks - u0.ticks)) / TICKS_PER_S / windowS,
      serverRssMiB: u1.rssMiB,
      clientCpuUsPerEntry: clientCpuUs / Math.max(1, open.opened * updates),
      loadAverage: load,
      clientBytesPerFollower: open.opened > 0 ? open.clientBytes / open.opened : NaN,
      notes,
    };
  } finally {
    await stopChildren(children);
    await writer?.close().catch(() => undefined);
    await server.stop().catch(() => undefined);
  }
}
