import { join } from "node:path";
import { isStateSyncError } from "@statesync/node";
import { StringCodec, type KV, type NatsConnection } from "nats";
import type { Channel } from "./lib/channel.js";
import { Child } from "./lib/child.js";
import { openCounter, tcp, type CounterSync } from "./lib/common.js";
import { sleep, uniqueStream } from "./lib/harness.js";
import type { Placement } from "./lib/placement.js";
import { WindowProfiler } from "./lib/profiler.js";

/**
 * The client side of the contention benchmark: N writers awaiting conditional increments of
 * one counter, either all in one client process or each in its own, and the NATS KV reference.
 * A failing update (RETRY_LIMIT or anything else) is counted and the writer goes on.
 */

/** What one writer did in one round. */
export interface WriterResult {
  commits: number;
  /** Attempts of every commit (1 = no conflict). */
  attempts: number[];
  /** Latency of every commit, ms. */
  latencies: number[];
  /** Updates that failed with RETRY_LIMIT. */
  retryLimit: number;
  /** Other failures by error code (or message). */
  errors: Record<string, number>;
}

/** How conflicting writers share the log (`BENCH_CONTENTION=turns` for the opt-in mode). */
export function contentionMode(): "retry" | "turns" {
  return process.env.BENCH_CONTENTION === "turns" ? "turns" : "retry";
}

function emptyResult(): WriterResult {
  return { commits: 0, attempts: [], latencies: [], retryLimit: 0, errors: {} };
}

/** Counts a failed update; says whether the writer can go on. */
function countFailure(r: WriterResult, err: unknown): boolean {
  if (isStateSyncError(err, "RETRY_LIMIT")) {
    r.retryLimit += 1;
    return true;
  }
  const code = isStateSyncError(err) ? err.code : err instanceof Error ? err.message : String(err);
  r.errors[code] = (r.errors[code] ?? 0) + 1;
  return !isStateSyncError(err, "CLOSED") && !(isStateSyncError(err) && err.code === "TRUNCATED");
}

/** One awaited update, timed; a failure is counted. Returns false when the writer must stop. */
async function step(sync: CounterSync, r: WriterResult, counted: () => boolean): Promise<boolean> {
  const t = performance.now();
  try {
    const u = await sync.update("increment", { by: 1 });
    if (!counted()) return true; // finished after the window: not counted
    r.latencies.push(performance.now() - t);
    r.attempts.push(u.attempts);
    r.commits += 1;
    return true;
  } catch (err) {
    if (!counted()) return true;
    const goOn = countFailure(r, err);
    if (goOn && !isStateSyncError(err, "RETRY_LIMIT")) await sleep(10);
    return goOn;
  }
}

/** Params of the `contention-writers` task. */
interface WritersParams {
  url: string;
  stream: string;
  tmpDir: string;
  clientIds: string[];
  /** Busy writers: each awaits its update and starts the next. Occasional: one per `everyMs`. */
  everyMs?: number;
  /** `--cpu-prof`: profile the writers' window into this file. */
  profileFile?: string;
}

/**
 * Task: opens one replica per client id, says `ready`, waits for `{ type: "go", ms }`, runs the
 * writers for `ms`, and returns one {@link WriterResult} per writer.
 */
export async function writersTask(p: WritersParams, channel: Channel): Promise<WriterResult[]> {
  const syncs: CounterSync[] = [];
  for (const clientId of p.clientIds) {
    syncs.push(
      await openCounter(p.url, p.stream, join(p.tmpDir, p.stream, clientId), {
        clientId,
        contention: contentionMode(),
      }),
    );
  }
  await Promise.all(syncs.map((s) => s.synced()));
  channel.send({ type: "ready" });
  const go = await channel.next();
  const ms = Number(go.ms);
  const results = syncs.map(() => emptyResult());
  const profiler = p.profileFile ? new WindowProfiler() : undefined;
  await profiler?.start();
  const end = performance.now() + ms;
  const counted = () => performance.now() < end;
  await Promise.all(
    syncs.map(async (sync, i) => {
      const r = results[i]!;
      if (p.everyMs === undefined) {
        while (counted() && (await step(sync, r, counted)));
        return;
      }
      // occasional: a random phase, then one update every `everyMs` (at once when behind)
      let next = performance.now() + Math.random() * p.everyMs;
      for (;;) {
        await sleep(Math.max(0, next - performance.now()));
        if (!counted() || !(await step(sync, r, counted))) return;
        next += p.everyMs;
      }
    }),
  );
  if (p.profileFile) await profiler?.stop(p.profileFile);
  await Promise.all(syncs.map((s) => s.close().catch(() => undefined)));
  return results;
}

/** How the writers of a round are spread over client processes. */
export type WriterMode = "one process" | "processes";

/** What a round of N writers produced. */
export interface RoundResult {
  writers: number;
  ms: number;
  perWriter: WriterResult[];
}

/**
 * One round: N writers on a fresh stream, in one child process or one child each, all on the
 * placement's client core; they start together once every replica is synced.
 */
export async function writersRound(
  placement: Placement,
  mode: WriterMode,
  url: string,
  tmpDir: string,
  writers: number,
  ms: number,
  options: { everyMs?: number; profileFile?: string } = {},
): Promise<RoundResult> {
  const stream = uniqueStream(`CT${writers}`);
  // The stream and its first entry exist before the writers open it concurrently.
  const creator = await openCounter(url, stream, tmpDir, { snapshots: false, live: false });
  await creator.close();
  const ids = Array.from({ length: writers }, (_, i) => `w${i}`);
  const groups = mode === "one process" ? [ids] : ids.map((id) => [id]);
  const children = groups.map((clientIds) =>
    Child.start(
      "contention-writers",
      { url, stream, tmpDir, clientIds, ...options },
      { placement },
    ),
  );
  try {
    await Promise.all(children.map((c) => c.expect("ready", 180_000)));
    for (const c of children) c.send({ type: "go", ms });
    const results = await Promise.all(children.map((c) => c.result<WriterResult[]>(ms + 180_000)));
    return { writers, ms, perWriter: results.flat() };
  } finally {
    await Promise.all(children.map((c) => c.kill()));
  }
}

const KEY = "counter";
const sc = StringCodec();

/** Params of the `contention-kv` task. */
interface KvParams {
  url: string;
  writers: number;
  ms: number;
}

/**
 * Task: the same workload with NATS KV compare-and-set as users write it: `get`, compute,
 * `update(key, value, revision)`, and on 10071 (wrong last sequence) back to `get`.
 */
export async function kvTask(p: KvParams): Promise<RoundResult> {
  const admin = await tcp(p.url);
  const bucket = uniqueStream(`KV${p.writers}`);
  const kv0 = await admin.jetstream().views.kv(bucket, { history: 1 });
  await kv0.put(KEY, sc.encode("0"));
  const conns: NatsConnection[] = [];
  const kvs: KV[] = [];
  for (let i = 0; i < p.writers; i++) {
    const nc = await tcp(p.url);
    conns.push(nc);
    kvs.push(await nc.jetstream().views.kv(bucket));
  }
  const perWriter = kvs.map(() => emptyResult());
  const end = performance.now() + p.ms;
  await Promise.all(
    kvs.map(async (kv, i) => {
      const r = perWriter[i]!;
      while (performance.now() < end) {
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
        if (performance.now() >= end) break;
        r.latencies.push(performance.now() - t);
        r.attempts.push(attempts);
        r.commits += 1;
      }
    }),
  );
  const final = Number(sc.decode((await kv0.get(KEY))!.value));
  const counted = perWriter.reduce((a, r) => a + r.commits, 0);
  if (final < counted) throw new Error(`KV lost updates: ${final} < ${counted}`);
  await Promise.all(conns.map((c) => c.close()));
  await (await admin.jetstreamManager()).streams.delete(`KV_${bucket}`);
  await admin.close();
  return { writers: p.writers, ms: p.ms, perWriter };
}
