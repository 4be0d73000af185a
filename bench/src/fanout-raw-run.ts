/**
 * The child side of the `fanout` benchmark's raw reference (fanout-raw.ts): plain nats.js core
 * subscribers on the state's republish subject, one connection each, that do nothing with a
 * message but note when it arrived: what this machine costs a fan-out with no statesync in it.
 *
 * Marks are told by arrival order (the n-th message a subscriber gets is mark n - warmup), so
 * that a subscriber does not even parse the headers; a message lost to one subscriber shifts its
 * later marks by one (the bench reports receipts lost, which are then not zero).
 */
import { connect, type NatsConnection } from "nats";
import type { Channel } from "./lib/channel.js";
import { describeError } from "./lib/harness.js";

/** What the bench process gives a raw subscriber child. */
export interface RawChildParams {
  url: string;
  /** The core subject the stream republishes the state's entries on. */
  subject: string;
  /** Subscribers in this child. */
  count: number;
  /** Messages before mark 1 (the writer's warm-up updates). */
  warmup: number;
  /** Subscribers opened at once. */
  openConcurrency: number;
  /** Give up opening after this long, ms (the rest counts as failed). */
  openCapMs: number;
}

/** Wall-clock ms with sub-ms resolution, comparable across processes of one machine. */
const wallMs = () => performance.timeOrigin + performance.now();

export async function fanoutRawTask(p: RawChildParams, channel: Channel): Promise<unknown> {
  /** Per arrival index n (1-based): subscribers that got their n-th message, when the last did. */
  const counts: number[] = [];
  const lastMs: number[] = [];
  /** Messages each subscriber got. */
  const received: number[] = [];
  const connections: NatsConnection[] = [];
  const failures: string[] = [];
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const started = Date.now();
  let next = 0;
  let lastProgress = 0;

  const openOne = async () => {
    const nc = await connect({ servers: p.url, timeout: 20_000 });
    connections.push(nc);
    const me = received.length;
    received.push(0);
    nc.subscribe(p.subject, {
      callback: () => {
        const n = (received[me] = received[me]! + 1);
        counts[n] = (counts[n] ?? 0) + 1;
        lastMs[n] = wallMs();
      },
    });
    await nc.flush(); // the server has the subscription before the writer's first update
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
        channel.send({ type: "progress", opened: connections.length, failed: failures.length });
      }
    }
  };
  await Promise.all(Array.from({ length: p.openConcurrency }, worker));
  global.gc?.();
  channel.send({
    type: "ready",
    opened: received.length,
    failed: failures.length + (p.count - next),
    firstFailure: failures[0],
    rssBefore,
    rssAfter: process.memoryUsage().rss,
    openMs: Date.now() - started,
  });

  for (;;) {
    const m = await channel.next();
    if (m.type === "cpu") {
      const u = process.cpuUsage();
      channel.send({ type: "cpu", us: u.user + u.system });
    } else if (m.type === "status") {
      const fewest = received.length ? Math.min(...received) : p.warmup;
      channel.send({
        type: "status",
        statuses: { live: received.length },
        minMark: fewest - p.warmup,
      });
    } else if (m.type === "report") {
      const marks: Array<[number, number, number]> = [];
      for (let n = 1; n < counts.length; n++) {
        if (counts[n] !== undefined) marks.push([n - p.warmup, counts[n]!, lastMs[n]!]);
      }
      channel.send({ type: "report", marks, hashes: {} });
    } else if (m.type === "stop") {
      break;
    }
  }
  await Promise.allSettled(connections.map((c) => c.close()));
  return { closed: connections.length };
}
