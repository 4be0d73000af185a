import { openCounter, payload, runLoops, tcp, type CounterSync } from "./lib/common.js";
import { num, ratio } from "./lib/format.js";
import { sleep, target, uniqueStream, type Benchmark } from "./lib/harness.js";
import { rawStream } from "./lib/raw.js";
import { median } from "./lib/stats.js";

const IN_FLIGHT = 256;
const ROUNDS = 5;

/** Waits until the replica has applied everything appended so far; returns how long it took. */
async function drain(sync: CounterSync, latest: number): Promise<number> {
  const t = performance.now();
  await sync.waitFor(latest);
  return performance.now() - t;
}

/**
 * 3. Unconditional appends (`updateUnconditionally`, many in flight) against raw asynchronous
 * `js.publish` (same payload size, a message id each, many in flight). The replica also follows
 * the log and applies every command: that is counted (it drains before the next run).
 */
export const unconditional: Benchmark = {
  name: "unconditional",
  title: "3. Unconditional appends, many in flight",
  needsServer: true,
  async run(ctx) {
    const url = ctx.server!.url;
    const ms = Math.round(1_000 * ctx.scale);
    const nc = await tcp(url);
    const sync = await openCounter(url, uniqueStream("UN_SYNC"), ctx.tmpDir);
    const raw = await rawStream(nc, uniqueStream("UN_RAW"));

    let latest = 0;
    const append = async () => {
      const r = await sync.updateUnconditionally("increment", { by: 1 });
      if (r.revision > latest) latest = r.revision;
    };
    const before = { ...sync.stats };
    await runLoops(IN_FLIGHT, Math.round(1_000 * ctx.scale), append);
    await drain(sync, latest);
    const entryBytes = Math.round(
      (sync.stats.bytesFetched - before.bytesFetched) /
        Math.max(1, sync.stats.entriesFetched - before.entriesFetched),
    );
    const data = payload(entryBytes);
    let n = 0;
    const publish = () => raw.js.publish(raw.subject, data, { msgID: `raw-${++n}` });
    await runLoops(IN_FLIGHT, Math.round(1_000 * ctx.scale), publish);

    const rawRates: number[] = [];
    const syncRates: number[] = [];
    const drains: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      ctx.progress(`round ${round + 1}/${ROUNDS}`);
      const r = await runLoops(IN_FLIGHT, ms, publish);
      rawRates.push((r.ops * 1000) / r.elapsedMs);
      await sleep(50);
      const s = await runLoops(IN_FLIGHT, ms, append);
      syncRates.push((s.ops * 1000) / s.elapsedMs);
      drains.push(await drain(sync, latest));
      await sleep(50);
    }
    const stats = { ...sync.stats };
    await sync.close();
    await nc.close();

    const rawRate = median(rawRates);
    const syncRate = median(syncRates);
    const r = median(syncRates.map((v, i) => v / rawRates[i]!));
    return {
      tables: [
        {
          title: `appends/s with ${IN_FLIGHT} in flight, median of ${ROUNDS} alternating runs of ${ms / 1000} s; entry ${entryBytes} B`,
          table: {
            headers: ["", "appends/s", "vs raw", "replica caught up after"],
            rows: [
              ["raw js.publish, async (reference)", num(rawRate), "1.00x", ""],
              [
                "sync.updateUnconditionally",
                num(syncRate),
                ratio(r),
                `${num(median(drains))} ms (median)`,
              ],
            ],
          },
          note: `(the replica applied ${stats.entriesApplied} commands, compacted ${stats.compactions} times)`,
        },
      ],
      summary: [
        {
          figure: `unconditional appends/s, ${IN_FLIGHT} in flight`,
          value: num(syncRate),
          reference: `${num(rawRate)} raw async publish`,
          ratio: ratio(r),
        },
      ],
      targets: [
        target(
          "unconditional appends / raw async publish",
          r,
          ">=",
          0.8,
          `${num(syncRate)} / ${num(rawRate)} appends/s`,
        ),
      ],
      data: { entryBytes, ms, inFlight: IN_FLIGHT, rawRates, syncRates, drains, stats },
    };
  },
};
