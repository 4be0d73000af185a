import { join } from "node:path";
import { createSynchronizer, defineModel, MemoryLog } from "@statesync/node";
import { z } from "zod";
import { runInChild } from "./lib/child.js";
import { num, ratio } from "./lib/format.js";
import { target, type Benchmark } from "./lib/harness.js";
import { countingPlacement } from "./lib/placement.js";
import { WindowProfiler } from "./lib/profiler.js";
import { median } from "./lib/stats.js";

const SMALL = 10;
const LARGE = 10_000;
const ROUNDS = 3;
/** Entities per bucket in the bucketed layout. */
const BUCKET = 100;

const entity = z.object({
  name: z.string(),
  count: z.number().int(),
  tags: z.array(z.string()),
  done: z.boolean(),
});
type Entity = z.infer<typeof entity>;

/** A model whose state is a map of `entities` entities of about 60 bytes of JSON each. */
function entitiesModel(entities: number) {
  const initial: { entities: Record<string, Entity> } = { entities: {} };
  for (let i = 0; i < entities; i++) {
    initial.entities[`e${i}`] = { name: `entity ${i}`, count: 0, tags: ["bench"], done: false };
  }
  return defineModel({
    name: `bench-entities-${entities}`,
    state: z.object({ entities: z.record(z.string(), entity) }),
    initial,
    commands: {},
  });
}

/** The same entities as {@link entitiesModel}, kept in buckets of {@link BUCKET} (a record of records). */
function bucketsModel(entities: number) {
  const initial: { buckets: Record<string, Record<string, Entity>> } = { buckets: {} };
  for (let i = 0; i < entities; i++) {
    const b = (initial.buckets[`b${Math.floor(i / BUCKET)}`] ??= {});
    b[`e${i}`] = { name: `entity ${i}`, count: 0, tags: ["bench"], done: false };
  }
  return defineModel({
    name: `bench-buckets-${entities}`,
    state: z.object({ buckets: z.record(z.string(), z.record(z.string(), entity)) }),
    initial,
    commands: {},
  });
}

/**
 * The writer's cost of one awaited conditional update (`sync.update(recipe)`) that changes one
 * entity, on MemoryLog with the defaults a user gets there (live, automatic compaction), for
 * `ms`. Returns µs per update; with `profileFile`, profiles that window.
 */
async function measure(entities: number, ms: number, profileFile?: string, buckets = false) {
  const log = new MemoryLog({ maxEntryBytes: 64 * 1024 * 1024 });
  let i = 0;
  let once: () => Promise<unknown>;
  let sync: { close(): Promise<void>; readonly stats: { readonly compactions: number } };
  if (buckets) {
    const s = await createSynchronizer({ log, model: bucketsModel(entities) });
    once = () =>
      s.update((d) => {
        const k = i++ % entities;
        d.buckets[`b${Math.floor(k / BUCKET)}`]![`e${k}`]!.count += 1;
      });
    sync = s;
  } else {
    const s = await createSynchronizer({ log, model: entitiesModel(entities) });
    once = () =>
      s.update((d) => {
        const e = d.entities[`e${i++ % entities}`]!;
        e.count += 1;
      });
    sync = s;
  }
  for (const end = performance.now() + Math.min(ms, 500); performance.now() < end;) await once();
  const profiler = profileFile ? new WindowProfiler() : undefined;
  await profiler?.start();
  let ops = 0;
  const t = performance.now();
  for (const end = t + ms; performance.now() < end; ops++) await once();
  const elapsed = performance.now() - t;
  if (profileFile) await profiler?.stop(profileFile);
  const compactions = sync.stats.compactions;
  await sync.close();
  return { usPerUpdate: (elapsed * 1000) / ops, ops, elapsed, compactions };
}

/** Task (`--cpu-prof large-state`): profiles updates of the 10,000-entity state. */
export async function largeStateProfileTask(p: { file: string; ms: number }): Promise<unknown> {
  const r = await measure(LARGE, p.ms, p.file);
  return {
    what: `awaited sync.update changing one of ${num(LARGE)} entities (MemoryLog)`,
    ops: r.ops,
    windowMs: r.elapsed,
  };
}

/**
 * 7. The cost of a small change to a large state: an awaited conditional update that changes
 * one entity of 10,000, against the same with 10 entities, on MemoryLog (the engine alone).
 */
export const largeState: Benchmark = {
  name: "large-state",
  title: "7. Engine alone (MemoryLog): a small change to a large state",
  needsServer: false,
  async run(ctx) {
    const ms = Math.round(2_000 * ctx.scale);
    const small: number[] = [];
    const large: number[] = [];
    const bucketed: number[] = [];
    let compactions = 0;
    for (let round = 0; round < ROUNDS; round++) {
      ctx.progress(`round ${round + 1}/${ROUNDS}`);
      small.push((await measure(SMALL, ms)).usPerUpdate);
      const l = await measure(LARGE, ms);
      large.push(l.usPerUpdate);
      compactions = l.compactions;
      bucketed.push((await measure(LARGE, ms, undefined, true)).usPerUpdate);
    }
    const s = median(small);
    const l = median(large);
    const b = median(bucketed);
    return {
      tables: [
        {
          title: `µs per awaited sync.update(recipe) changing one entity, median of ${ROUNDS} alternating runs of ${ms / 1000} s (MemoryLog, live, automatic compaction)`,
          table: {
            headers: ["entities in the state", "µs per update", "vs 10 entities"],
            rows: [
              [num(SMALL, 0), num(s, 1), "1.00x"],
              [num(LARGE), num(l, 1), ratio(l / s)],
              [`${num(LARGE)} in buckets of ${BUCKET}`, num(b, 1), ratio(b / s)],
            ],
          },
          note: `(the 10,000-entity writer compacted ${compactions} times in its last run)`,
        },
      ],
      summary: [
        {
          figure: `µs per update changing one entity: ${num(LARGE)} vs ${SMALL} entities`,
          value: `${num(l, 1)} vs ${num(s, 1)} µs`,
          ratio: ratio(l / s),
        },
        {
          figure: `the same, ${num(LARGE)} entities in buckets of ${BUCKET} (a record of records)`,
          value: `${num(b, 1)} vs ${num(s, 1)} µs`,
          ratio: ratio(b / s),
        },
      ],
      targets: [
        target(
          `update cost, ${num(LARGE)} / ${SMALL} entities`,
          l / s,
          "<=",
          10,
          `${num(l, 1)} / ${num(s, 1)} µs per update`,
        ),
      ],
      data: { ms, small, large, bucketed, compactions },
    };
  },
  async profile(ctx) {
    const file = join(ctx.dir, "large-state.cpuprofile");
    const r = await runInChild<{ what: string; ops: number; windowMs: number }>(
      "large-state-profile",
      { file, ms: Math.round(5_000 * ctx.scale) },
      { placement: countingPlacement() },
    );
    return { ...r, file };
  },
};
