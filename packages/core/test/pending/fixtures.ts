import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  encodeEntry,
  MemoryPendingStore,
  pendingQueue,
  type MemoryLog,
  type PendingRecord,
  type PendingStore,
  type SnapshotStore,
  type StateSyncError,
} from "@statesync/core";

/** A board of cards: `take` refuses a card that is not there (a rebase can refuse it). */
export const board = defineModel({
  name: "board",
  state: z.object({ cards: z.array(z.string()), n: z.number().int() }),
  initial: { cards: [], n: 0 },
  commands: {
    add: {
      args: z.object({ card: z.string() }),
      apply(draft, { card }) {
        draft.cards.push(card);
      },
    },
    take: {
      args: z.object({ card: z.string() }),
      apply(draft, { card }) {
        const i = draft.cards.indexOf(card);
        if (i < 0) throw new Error(`no card ${card}`);
        draft.cards.splice(i, 1);
      },
    },
    bump: {
      args: z.object({}),
      apply(draft) {
        draft.n += 1;
      },
    },
  },
});

/** A replica of `board` with an offline queue in `store` (a new memory store by default). */
export async function openQueued(
  log: MemoryLog,
  store: PendingStore = new MemoryPendingStore(),
  extra: { owner?: string; compaction?: false; clientId?: string; snapshots?: SnapshotStore } = {},
) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log,
    model: board,
    pending: pendingQueue({ store, owner: extra.owner ?? "device-1" }),
    compaction: extra.compaction ?? false,
    ...(extra.snapshots ? { snapshots: extra.snapshots } : {}),
    onError: (e) => errors.push(e),
    ...(extra.clientId ? { clientId: extra.clientId } : {}),
  });
  return Object.assign(sync, { errors, store });
}

/**
 * A replica of `board` with a memory queue whose `bump` counts its runs in `counter.runs` (how
 * often a view ran it again), for tests of what the optimistic view re-runs.
 */
export async function openCounting(log: MemoryLog) {
  const counter = { runs: 0 };
  const model = {
    ...board,
    commands: {
      ...board.commands,
      bump: {
        ...board.commands.bump,
        apply(draft: { n: number }) {
          counter.runs += 1;
          draft.n += 1;
        },
      },
    },
  } as typeof board;
  const sync = await createSynchronizer({
    log,
    model,
    pending: pendingQueue({ store: new MemoryPendingStore(), owner: "o" }),
    compaction: false,
  });
  return { sync, counter };
}

/** Another writer's command, appended raw (works while the log is "offline" for everyone). */
export function injectCommand(log: MemoryLog, name: string, args: unknown): number {
  return log.injectRaw(
    encodeEntry({ v: 1, kind: "command", ts: Date.now(), client: "other", seed: 7, name, args }),
  );
}

/** Decoded entries of the log (kind, name, origin), in order. */
export async function entries(log: MemoryLog) {
  const out: Array<{ revision: number; kind: string; origin?: [string, number]; v: number }> = [];
  const latest = (await log.info()).latestRevision;
  for await (const e of log.read(1, latest)) {
    const json = JSON.parse(new TextDecoder().decode(e.data)) as {
      kind: string;
      origin?: [string, number];
      v: number;
    };
    out.push({ revision: e.revision, kind: json.kind, origin: json.origin, v: json.v });
  }
  return out;
}

/** The records stored in `store`'s queue of `board` for `owner` (the queue must not be held). */
export async function stored(store: PendingStore, owner = "device-1"): Promise<PendingRecord[]> {
  const q = await store.open("board", owner);
  try {
    return (await q.load()).records;
  } finally {
    await q.close();
  }
}
