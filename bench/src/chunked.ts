import { fork } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { encodeEntry, JetStreamLog, openSynchronizer } from "@statesync/node";
import { tcp } from "./lib/common.js";
import { bytes, num, ratio } from "./lib/format.js";
import { target, uniqueStream, type Benchmark } from "./lib/harness.js";
import { chunkedModel, itemArgs } from "./lib/chunked-model.js";

const ENTRIES = 100_000;
const QUICK_ENTRIES = 10_000;
const ITEM_CHARS = 1_000;
const IN_FLIGHT = 256;
const UPDATES_PER_SECOND = 1_000;
const FOLLOW_SECONDS = 15;
const QUICK_FOLLOW_SECONDS = 5;

const CHILD = join(dirname(fileURLToPath(import.meta.url)), "chunked-child.js");

type Opened = {
  type: "opened";
  openMs: number;
  revision: number;
  hash: string;
  jsonBytes: number;
  bytesFetched: number;
  entriesApplied: number;
  peakRssGrowth: number;
  peakHeapGrowth: number;
  heapHeld: number;
  compactMs?: number;
  revisionAfter?: number;
};
type Followed = {
  type: "followed";
  series: number[];
  revisions: number[];
  behind: number;
  catchUpMs: number;
  revision: number;
  hash: string;
  compactions: number;
  snapshotsSaved: number;
  entriesApplied: number;
};

/**
 * A child process of `chunked-child.ts` and the messages it sends, in order. `peakHeap()`: the
 * largest heap in use the child's GCs saw (`--trace-gc`: "Scavenge 12.3 (14.0) -> ...", the
 * figure before the arrow, MB) between its `@@open-start` and `@@open-end` marks, or at the end
 * mark, less the heap at the start mark: a sampling timer cannot see inside a synchronous step
 * (joining and parsing the parts), a GC inside it can.
 */
function child(args: string[]) {
  const proc = fork(CHILD, args, {
    execArgv: ["--expose-gc", "--trace-gc"],
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  const queue: Array<Record<string, unknown>> = [];
  const waiting: Array<(m: Record<string, unknown>) => void> = [];
  let inStart = false;
  let base = 0;
  let peak = 0;
  let buffered = "";
  proc.stdout!.on("data", (d: Buffer) => {
    buffered += d.toString();
    const lines = buffered.split("\n");
    buffered = lines.pop()!;
    for (const line of lines) {
      const mark = /^@@open-(start|end) (\d+)/.exec(line);
      if (mark) {
        inStart = mark[1] === "start";
        if (inStart) base = Number(mark[2]);
        else peak = Math.max(peak, Number(mark[2]));
        continue;
      }
      const gc =
        /: (?:Scavenge|Mark-Compact|Mark-sweep|Minor Mark-Compact)[^0-9]*([0-9.]+) \(/.exec(line);
      if (gc && inStart) peak = Math.max(peak, Number(gc[1]) * 1024 * 1024);
    }
  });
  proc.on("message", (m) => {
    const msg = m as Record<string, unknown>;
    const w = waiting.shift();
    if (w) w(msg);
    else queue.push(msg);
  });
  proc.on("exit", (code) => {
    for (const w of waiting.splice(0)) w({ type: "error", message: `child exited ${code}` });
  });
  return {
    proc,
    peakHeap: () => Math.max(0, peak - base),
    next: () =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const take = (m: Record<string, unknown>) =>
          m.type === "error" ? reject(new Error(String(m.message))) : resolve(m);
        const m = queue.shift();
        if (m) take(m);
        else waiting.push(take);
      }),
  };
}

/**
 * 8. Chunked snapshots (issue 13): a state of about 100 MB (10 MB with --quick) built by 100,000
 * updates of about 1 KB. Each measured start runs in a fresh Node process (peak memory its own):
 * cold start replaying every update, the compaction (a chunked snapshot: the state is larger
 * than the server's 1 MiB max_payload), cold start from the chunked snapshot; then a replica
 * holding the state, with the default compaction and local snapshots, follows 1,000 small
 * unconditional updates a second: its heap after GC each second, and how often it compacted
 * and saved.
 */
export const chunked: Benchmark = {
  name: "chunked",
  title: "8. Chunked snapshots: a state larger than one message",
  needsServer: true,
  async run(ctx) {
    const url = ctx.server!.url;
    const quick = ctx.scale < 1;
    const entries = quick ? QUICK_ENTRIES : ENTRIES;
    const followSeconds = quick ? QUICK_FOLLOW_SECONDS : FOLLOW_SECONDS;
    const stream = uniqueStream("CHUNKED");

    // The history: a genesis entry from a replica, then the updates appended as raw entries.
    const genesis = await openSynchronizer({
      servers: url,
      stream,
      model: chunkedModel,
      snapshots: false,
      compaction: false,
      live: false,
    });
    await genesis.close();
    const nc = await tcp(url);
    const log = new JetStreamLog({ connection: nc, stream });
    const command = (name: string, args: unknown, i: number) =>
      encodeEntry({
        v: 1,
        kind: "command",
        ts: Date.now(),
        client: "bench",
        seed: i,
        name,
        args,
      });
    ctx.progress(`appending ${num(entries)} updates of about ${ITEM_CHARS} bytes`);
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < entries) {
          const i = next++;
          await log.appendUnconditional(command("put", itemArgs(i, ITEM_CHARS), i), `h-${i}`);
        }
      }),
    );

    ctx.progress("cold start replaying every update, then compaction");
    const replay = child([url, stream, "compact", ""]);
    const replayed = (await replay.next()) as Opened;
    replayed.peakHeapGrowth = replay.peakHeap();
    ctx.progress("cold start from the chunked snapshot");
    const load = child([url, stream, "open", ""]);
    const loaded = (await load.next()) as Opened;
    loaded.peakHeapGrowth = load.peakHeap();
    if (loaded.hash !== replayed.hash || loaded.revision !== replayed.revisionAfter) {
      throw new Error("the replica started from the chunked snapshot differs from the replay");
    }
    // Nothing else was written during the compaction: part 0 came right after the revision it
    // captured, then the other parts, then the snapshot entry.
    const parts = replayed.revisionAfter! - replayed.revision - 1;

    // The floor: the same parts read through the log with nothing decoded.
    let rawReadMs: number | undefined;
    try {
      const t = performance.now();
      let n = 0;
      for await (const e of log.read(replayed.revision + 1, loaded.revision))
        n += e.data.byteLength;
      rawReadMs = n > 0 ? performance.now() - t : undefined;
    } catch {
      rawReadMs = undefined; // reported as n/a
    }

    ctx.progress(`a replica following ${UPDATES_PER_SECOND} updates/s for ${followSeconds} s`);
    const follower = child([url, stream, "follow", join(ctx.tmpDir, "snapshots")]);
    const start = (await follower.next()) as Opened;
    let sent = 0;
    let failed = 0;
    const pending = new Set<Promise<unknown>>();
    const tickMs = 10;
    const perTick = (UPDATES_PER_SECOND * tickMs) / 1000;
    const timer = setInterval(() => {
      for (let k = 0; k < perTick; k++) {
        const i = sent++;
        const data =
          i % 2 === 0
            ? command("tick", {}, i)
            : command("put", { b: `b${i % 97}`, k: `live${i % 500}`, v: `v${i}` }, i);
        const p = log.appendUnconditional(data, `live-${i}`).catch(() => (failed += 1));
        pending.add(p);
        void p.finally(() => pending.delete(p));
      }
    }, tickMs);
    await new Promise((r) => setTimeout(r, followSeconds * 1000));
    clearInterval(timer);
    await Promise.all([...pending]);
    const latest = (await log.info()).latestRevision;
    follower.proc.send({ type: "stop", latest });
    const followed = (await follower.next()) as Followed;
    await log.close();
    await nc.close();

    const speedup = replayed.openMs / loaded.openMs;
    const heapRatio = loaded.peakHeapGrowth / loaded.jsonBytes;
    const rssRatio = loaded.peakRssGrowth / loaded.jsonBytes;
    // Heap after GC each second; a local save in progress holds the state's text for a moment,
    // so the median says more than one sample.
    const series = followed.series;
    const sorted = [...series].sort((x, y) => x - y);
    const medianHeap = sorted[Math.floor(sorted.length / 2)] ?? 0;
    const openHeap = start.heapHeld;
    const lastHeap = series.at(-1) ?? 0;
    const maxHeap = Math.max(...series);
    const minHeap = Math.min(...series);
    const row = (name: string, o: Opened) => [
      name,
      `${num(o.openMs)} ms`,
      bytes(o.bytesFetched),
      num(o.entriesApplied),
      bytes(o.peakHeapGrowth),
      bytes(o.peakRssGrowth),
      bytes(o.heapHeld),
    ];
    return {
      tables: [
        {
          title: `a state of ${bytes(replayed.jsonBytes)} (JSON) built by ${num(entries)} updates of about ${num(ITEM_CHARS)} bytes; each start in a fresh process`,
          table: {
            headers: [
              "",
              "time to synced",
              "bytes read",
              "entries applied",
              "peak heap growth (GC trace)",
              "peak RSS growth",
              "heap held after",
            ],
            rows: [
              row("cold start, replaying every update", replayed),
              row(`cold start from the chunked snapshot (${parts} parts)`, loaded),
            ],
          },
          note: `compaction (the replica that replayed it): ${num(replayed.compactMs ?? 0)} ms for ${parts} parts and the snapshot entry. Reading the same parts through the log without decoding them (the floor of a start from them): ${rawReadMs === undefined ? "n/a" : `${num(rawReadMs)} ms`}. Peak heap: the largest heap in use at any GC during the start (--trace-gc) or at its end, less the heap before it; peak RSS growth is the process's maximum resident set less the one before the start.`,
        },
        {
          title: `a replica holding the state follows ${num(UPDATES_PER_SECOND)} small unconditional updates/s for ${followSeconds} s (default compaction and local snapshots)`,
          table: {
            headers: [
              "heap after GC at open",
              "each second: median",
              "min",
              "max",
              "last",
              "compactions",
              "local saves",
              "updates sent",
              "behind when they stopped",
            ],
            rows: [
              [
                bytes(openHeap),
                bytes(medianHeap),
                bytes(minHeap),
                bytes(maxHeap),
                bytes(lastHeap),
                String(followed.compactions),
                String(followed.snapshotsSaved),
                `${num(sent)} (${failed} failed)`,
                `${followed.behind} entries, caught up in ${Math.round(followed.catchUpMs)} ms`,
              ],
            ],
          },
        },
      ],
      summary: [
        {
          figure: `chunked snapshot of ${bytes(replayed.jsonBytes)}: compaction`,
          value: `${num(replayed.compactMs ?? 0)} ms, ${parts} parts`,
        },
        {
          figure: "cold start from the chunked snapshot",
          value: `${num(loaded.openMs)} ms`,
          reference: `replaying ${num(entries)} updates: ${num(replayed.openMs)} ms`,
          ratio: `${num(speedup, 1)}x faster`,
        },
        {
          figure: "peak heap during that cold start / state JSON",
          value: `${bytes(loaded.peakHeapGrowth)} / ${bytes(loaded.jsonBytes)}`,
          ratio: ratio(heapRatio),
        },
        {
          figure: `heap of a replica following ${num(UPDATES_PER_SECOND)} updates/s`,
          value: `median ${bytes(medianHeap)} after GC (at open ${bytes(openHeap)}, max ${bytes(maxHeap)})`,
          ratio: ratio(medianHeap / Math.max(1, openHeap)),
        },
      ],
      targets: [
        target(
          "cold start from the chunked snapshot vs replaying the updates",
          speedup,
          ">=",
          10,
          `${num(replayed.openMs)} / ${num(loaded.openMs)} ms = ${num(speedup, 1)}x`,
        ),
        target(
          "peak heap during that cold start / the state's JSON size",
          heapRatio,
          "<=",
          4,
          `${bytes(loaded.peakHeapGrowth)} / ${bytes(loaded.jsonBytes)} (peak RSS growth: ${ratio(rssRatio)})`,
        ),
        target(
          "heap while following 1,000 updates/s: median after GC / at open",
          medianHeap / Math.max(1, openHeap),
          "<=",
          1.25,
          `${bytes(medianHeap)} / ${bytes(openHeap)}; ${followed.compactions} compactions, ${followed.snapshotsSaved} local saves in ${followSeconds} s; ${followed.behind} entries behind when the writes stopped`,
        ),
      ],
      data: {
        rawReadMs,
        entries,
        itemChars: ITEM_CHARS,
        parts,
        replayed,
        loaded,
        start,
        followed,
        sent,
        failed,
      },
    };
  },
};
