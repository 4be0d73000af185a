import {
  FileSnapshotStore,
  openSynchronizer,
  type OpenSynchronizerOptions,
  type SnapshotStore,
  type StateSynchronizer,
} from "@statesync/node";
import { join } from "node:path";
import { tcp } from "./lib/common.js";
import { bytes, num, ratio } from "./lib/format.js";
import { target, uniqueStream, type Benchmark } from "./lib/harness.js";
import { itemsModel } from "./lib/models.js";
import { median } from "./lib/stats.js";

const HISTORY = 100_000;
const TAIL = 1_000;
const KEYS = 1_000;
const ROUNDS = 3;
const IN_FLIGHT = 512;

type ItemsState = (typeof itemsModel)["initial"];
type ItemsCommands = (typeof itemsModel)["commands"];
type Items = StateSynchronizer<ItemsState, ItemsCommands>;
type OpenOptions = Partial<OpenSynchronizerOptions<ItemsState, ItemsCommands>>;

/** A snapshot store that only loads: every measured start restores the same local snapshot. */
function readOnly(store: SnapshotStore): SnapshotStore {
  return { load: (k) => store.load(k), save: async () => undefined, delete: async () => undefined };
}

/**
 * 4. Cold start of a state with 100,000 entries of history: full replay (no local snapshot), a
 * local snapshot on disk plus a tail of 1,000 entries, and a fresh replica after compaction
 * (the log starts with a snapshot entry). Time from `openSynchronizer` to resolved (synced), and
 * the bytes of entries it read (`stats.bytesFetched`).
 */
export const coldStart: Benchmark = {
  name: "cold-start",
  title: "4. Cold start, 100,000 entries of history",
  needsServer: true,
  async run(ctx) {
    const url = ctx.server!.url;
    const history = Math.round(HISTORY * ctx.scale);
    const tail = Math.round(TAIL * ctx.scale);
    const stream = uniqueStream("COLD");
    const nc = await tcp(url);
    const open = (options: OpenOptions = {}): Promise<Items> =>
      openSynchronizer<ItemsState, ItemsCommands>({
        connection: nc,
        stream,
        model: itemsModel,
        snapshots: false,
        live: false,
        compaction: false,
        ...options,
      });

    // One entry per command, as the benchmark's history is counted (groupCommands would put the
    // commands in flight together in one entry).
    const writer = await open({ groupCommands: false });
    const write = async (count: number) => {
      ctx.progress(`appending ${count} entries`);
      let next = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          while (next < count) {
            const i = next++;
            await writer.updateUnconditionally("set", { key: `k${i % KEYS}`, value: i });
          }
        }),
      );
    };
    await write(history - tail);
    // A replica that was at the tail back then saved its snapshot on disk when it closed.
    const disk = new FileSnapshotStore(join(ctx.tmpDir, "snapshots"));
    const earlier = await open({ snapshots: disk, snapshotEvery: 0 });
    await earlier.close();
    await write(tail);
    await writer.close();

    const measure = async (what: string, options: OpenOptions) => {
      const times: number[] = [];
      const fetched: number[] = [];
      let revision = 0;
      for (let round = 0; round < ROUNDS; round++) {
        ctx.progress(`${what} ${round + 1}/${ROUNDS}`);
        const t = performance.now();
        const sync = await open(options);
        times.push(performance.now() - t);
        fetched.push(sync.stats.bytesFetched);
        revision = sync.revision;
        await sync.close();
      }
      return { ms: median(times), bytes: median(fetched), times, revision };
    };
    const full = await measure("full replay", {});
    const snap = await measure("snapshot + tail", { snapshots: readOnly(disk) });
    ctx.progress("compacting");
    const compactor = await open({ snapshots: readOnly(disk) });
    await compactor.compact();
    await compactor.close();
    const compacted = await measure("after compaction", {});
    await nc.close();

    const rows = [
      ["full replay (no local snapshot)", full],
      [`local snapshot on disk + ${num(tail)}-entry tail`, snap],
      ["after compaction (no local snapshot)", compacted],
    ] as const;
    const snapRatio = snap.ms / full.ms;
    return {
      tables: [
        {
          title: `time to a synced replica, median of ${ROUNDS}; history of ${num(history)} entries (${num(KEYS)} keys)`,
          table: {
            headers: ["", "time", "vs full replay", "bytes read", "revision"],
            rows: rows.map(([name, m]) => [
              name,
              `${num(m.ms)} ms`,
              ratio(m.ms / full.ms),
              bytes(m.bytes),
              String(m.revision),
            ]),
          },
        },
      ],
      summary: [
        {
          figure: `cold start, ${num(history)} entries: full replay`,
          value: `${num(full.ms)} ms, ${bytes(full.bytes)}`,
        },
        {
          figure: `cold start: local snapshot + ${num(tail)}-entry tail`,
          value: `${num(snap.ms)} ms, ${bytes(snap.bytes)}`,
          reference: "full replay",
          ratio: `1/${num(full.ms / snap.ms, 0)}`,
        },
        {
          figure: "cold start: after compaction",
          value: `${num(compacted.ms)} ms, ${bytes(compacted.bytes)}`,
          reference: "full replay",
          ratio: `1/${num(full.ms / compacted.ms, 0)}`,
        },
      ],
      targets: [
        target(
          "cold start from a local snapshot / full replay",
          snapRatio,
          "<=",
          1 / 50,
          `${num(snap.ms)} / ${num(full.ms)} ms = 1/${num(full.ms / snap.ms, 0)}`,
        ),
      ],
      data: { history, tail, keys: KEYS, full, snapshot: snap, compacted },
    };
  },
};
