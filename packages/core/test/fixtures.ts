import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  type RevisionedLog,
  type SnapshotStore,
  type StateSyncError,
} from "@statesync/core";

/** A counter whose `bump` throws for even `n` (unconditional commands that fail for some calls). */
export const riskyModel = defineModel({
  name: "risky",
  state: z.object({ count: z.number().int() }),
  initial: { count: 0 },
  commands: {
    bump: {
      args: z.object({ n: z.number().int() }),
      apply(d, { n }) {
        if (n % 2 === 0) throw new Error(`n=${n} refused`);
        d.count += 1;
      },
    },
  },
});

/** A counter plus a list: enough to exercise patches, commands and unconditional updates. */
export const counterModel = defineModel({
  name: "counter",
  state: z.object({
    count: z.number().int(),
    items: z.array(z.string()),
    log: z.array(z.string()),
  }),
  initial: { count: 0, items: [], log: [] },
  commands: {
    increment: {
      args: z.object({ by: z.number().int().default(1) }),
      apply(draft, args) {
        draft.count += args.by;
      },
    },
    push: {
      args: z.object({ item: z.string() }),
      apply(draft, args, ctx) {
        draft.items.push(`${args.item}@${ctx.revision}`);
      },
    },
    stamp: {
      args: z.object({}),
      apply(draft, _args, ctx) {
        draft.log.push(
          `${ctx.clientId}:${ctx.timestamp}:${ctx.random().toFixed(6)}:${ctx.revision}`,
        );
      },
    },
    fail: {
      args: z.object({}),
      apply(draft) {
        draft.count += 1000;
        throw new Error("recipe failed on purpose");
      },
    },
  },
});

export type CounterModel = typeof counterModel;
export type CounterState = CounterModel["initial"];

export async function open(
  log: RevisionedLog = new MemoryLog(),
  extra: {
    snapshots?: SnapshotStore;
    clientId?: string;
    live?: boolean;
    waitFor?: "synced" | "restored";
    contention?: "retry" | "turns";
    compaction?: false | { everyEntries?: number; everyBytes?: number; jitter?: number };
  } = {},
) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log,
    model: counterModel,
    onError: (e) => errors.push(e),
    ...extra,
  });
  return Object.assign(sync, { errors });
}

export function until(fn: () => boolean, timeoutMs = 5_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const start = Date.now();
    const tick = () => {
      if (fn()) return resolve();
      if (Date.now() - start > timeoutMs) return reject(new Error("condition not reached in time"));
      setTimeout(tick, 2);
    };
    tick();
  });
}

export async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return (e as StateSyncError).code ?? String(e);
  }
}

/** Resolves "late" after `ms`: the loser of a race against a call that should end first. */
export const late = (ms: number) => new Promise<string>((r) => setTimeout(() => r("late"), ms));
