/**
 * The child side of the `fanout` benchmark: one process holding many followers of one state,
 * each a full replica on its own NATS connection (see fanout.ts). It opens them a few at a time,
 * records when each mark (the writer's sequence number) reached all of its followers, and
 * answers the bench process's questions over the IPC channel until told to stop.
 */
import { openJetStreamSynchronizer, stateHash } from "@statesync/node";
import { connect, type NatsConnection } from "nats";
import { counterModel, type CounterSync } from "./lib/common.js";
import type { Channel } from "./lib/channel.js";
import { describeError } from "./lib/harness.js";
import { WindowProfiler } from "./lib/profiler.js";

/** What the bench process gives a follower child. */
export interface FanoutChildParams {
  url: string;
  stream: string;
  /** Followers in this child. */
  count: number;
  /** Follow through republished entries (true) or one consumer each (false). */
  fanout: boolean;
  /** Followers opened at once. */
  openConcurrency: number;
  /** Give up opening after this long, ms (the rest counts as failed). */
  openCapMs: number;
  /** nats.js `reconnectJitter` of every follower's connection, ms. */
  reconnectJitterMs: number;
  /** Connect over WebSocket with `nats.ws` (as browsers do; `url` is then the ws:// one). */
  websocket?: boolean;
}

/** Per mark: how many followers of this child applied it, and when the last one did. */
type MarkRecord = { count: number; lastMs: number };

/** A `nats.ws` connection in Node (`globalThis.WebSocket` from the `ws` package). */
async function connectWs(options: object): Promise<NatsConnection> {
  const g = globalThis as { WebSocket?: unknown };
  if (g.WebSocket === undefined) g.WebSocket = (await import("ws")).default;
  const { connect: ws } = await import("nats.ws");
  return (await ws(options)) as unknown as NatsConnection;
}

/** Wall-clock ms with sub-ms resolution, comparable across processes of one machine. */
const wallMs = () => performance.timeOrigin + performance.now();

export async function fanoutFollowersTask(
  p: FanoutChildParams,
  channel: Channel,
): Promise<unknown> {
  const marks = new Map<number, MarkRecord>();
  const followers: CounterSync[] = [];
  const connections: NatsConnection[] = [];
  const failures: string[] = [];
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const started = Date.now();
  let next = 0;
  let lastProgress = 0;

  /** Opens one follower: its own connection, no snapshots (memory only), fan-out or not. */
  const openOne = async () => {
    const options = {
      servers: p.url,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1_000,
      reconnectJitter: p.reconnectJitterMs,
      timeout: 20_000,
    };
    const nc = p.websocket ? await connectWs(options) : await connect(options);
    connections.push(nc);
    const sync = (await openJetStreamSynchronizer({
      connection: nc,
      stream: p.stream,
      model: counterModel,
      snapshots: false,
      compaction: false,
      requestTimeoutMs: 20_000,
      fanout: p.fanout,
    })) as CounterSync;
    followers.push(sync);
    // The per-entry cost of the measurement: one listener call and a map update per mark.
    let seen = sync.state.mark;
    sync.subscribe((state) => {
      if (state.mark <= seen) return;
      const t = wallMs();
      for (let m = seen + 1; m <= state.mark; m++) {
        const r = marks.get(m);
        if (r) {
          r.count += 1;
          r.lastMs = t;
        } else marks.set(m, { count: 1, lastMs: t });
      }
      seen = state.mark;
    });
  };
  const worker = async () => {
    while (next < p.count && Date.now() - started < p.openCapMs) {
      next += 1;
      try {
        await openOne();
      } catch (err) {
        failures.push(describeError(err));
      }
      if (Date.now() - lastProgress > 2_000) {
        lastProgress = Date.now();
        channel.send({ type: "progress", opened: followers.length, failed: failures.length });
      }
    }
  };
  await Promise.all(Array.from({ length: p.openConcurrency }, worker));
  global.gc?.();
  const rssAfter = process.memoryUsage().rss;
  channel.send({
    type: "ready",
    opened: followers.length,
    failed: failures.length + (p.count - next),
    firstFailure: failures[0],
    rssBefore,
    rssAfter,
    openMs: Date.now() - started,
  });

  let profiler: WindowProfiler | undefined;
  for (;;) {
    const m = await channel.next();
    if (m.type === "profile-start") {
      profiler = new WindowProfiler();
      await profiler.start();
      channel.send({ type: "profile-start" });
    } else if (m.type === "profile-stop") {
      await profiler?.stop(String(m.file));
      channel.send({ type: "profile-stop", followers: followers.length });
    } else if (m.type === "cpu") {
      const u = process.cpuUsage();
      channel.send({ type: "cpu", us: u.user + u.system });
    } else if (m.type === "status") {
      const statuses: Record<string, number> = {};
      let minMark = Infinity;
      for (const f of followers) {
        statuses[f.status] = (statuses[f.status] ?? 0) + 1;
        minMark = Math.min(minMark, f.state.mark);
      }
      channel.send({ type: "status", statuses, minMark: followers.length ? minMark : 0 });
    } else if (m.type === "report") {
      const hashes: Record<string, number> = {};
      for (const f of followers) {
        const h = `${f.revision}:${stateHash(f.state)}`;
        hashes[h] = (hashes[h] ?? 0) + 1;
      }
      channel.send({
        type: "report",
        marks: [...marks].map(([mark, r]) => [mark, r.count, r.lastMs]),
        hashes,
        rss: process.memoryUsage().rss,
      });
    } else if (m.type === "stop") {
      break;
    }
  }
  await Promise.allSettled(followers.map((f) => f.close()));
  await Promise.allSettled(connections.map((c) => c.close()));
  return { closed: followers.length };
}
