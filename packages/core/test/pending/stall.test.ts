import {
  defineModel,
  encodeEntry,
  MemoryLog,
  type StateSyncError,
  type StateSynchronizer,
} from "@statesync/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { board, injectCommand, openQueued } from "./fixtures.js";

/**
 * docs/offline.md: a replica that stalls rejects the callers of its queued updates, and every
 * `flush()`, with the stall error at the stall, not at `close()`; the records stay stored (a
 * newer app version drains them). Here the log takes no append: the first update is being sent
 * (the append is tried again), the others wait behind it, when the log stalls the replica.
 */
const boardV2 = defineModel({
  name: "board",
  version: 2,
  state: z.object({ cards: z.array(z.string()), n: z.number().int(), tag: z.string() }),
  initial: { cards: [], n: 0, tag: "" },
  commands: {
    bump: {
      args: z.object({}),
      apply: (d: { cards: string[]; n: number; tag: string }) => void (d.n += 1),
    },
  },
  predecessor: board,
  migrate: (s: { cards: string[]; n: number }) => ({ ...s, tag: "" }),
});

/** Settles to the error code of `p` (or "resolved"), recording that it settled. */
function outcome(p: Promise<unknown>, settled: string[], name: string): Promise<string> {
  return p.then(
    () => (settled.push(name), "resolved"),
    (e: StateSyncError) => (settled.push(name), e.code),
  );
}

/** Resolves once the synchronizer announces `stalled`. */
function stalled(sync: Pick<StateSynchronizer<never, never>, "on">): Promise<void> {
  return new Promise((resolve) => {
    sync.on("status", (s) => void (s === "stalled" && resolve()));
  });
}

/** Waits until the queue has tried (and failed) to push its head at least once. */
async function triedOnce(sync: { pending: ReadonlyArray<{ attempts: number }> }): Promise<void> {
  while ((sync.pending[0]?.attempts ?? 0) < 1) await new Promise((r) => setTimeout(r, 5));
  await new Promise((r) => setTimeout(r, 20)); // the failed send returns; the queue waits
}

const stalls: Array<[string, (log: MemoryLog, base: number) => void]> = [
  [
    "MODEL_UPGRADED",
    (log, base) =>
      log.injectRaw(
        encodeEntry({
          v: 2,
          kind: "switch",
          base,
          ts: Date.now(),
          client: "v2-app",
          model: "board",
          from: 1,
          version: 2,
          initialHash: boardV2.initialHash,
          state: { cards: [], n: 0, tag: "" },
        }),
      ),
  ],
  ["UNKNOWN_COMMAND", (log) => void injectCommand(log, "nope", {})],
  // The log's connection ended for good (nats.js gave up reconnecting, or `nc.close()`).
  ["CONNECTION_CLOSED", (log) => log.closeConnection()],
];

describe("a stall with queued updates", () => {
  for (const [code, stall] of stalls) {
    it(`${code}: queued updates and flush() reject at the stall, records kept`, async () => {
      const log = new MemoryLog();
      const sync = await openQueued(log);
      log.failNextAppends(1_000_000);
      const settled: string[] = [];
      const first = sync.updateUnconditionally("bump", {});
      const second = sync.updateUnconditionally("add", { card: "x" });
      const third = sync.update("add", { card: "y" }); // conditional, with its command stored
      await Promise.all([first.queued, second.queued, third.queued]);
      const outcomes = [
        outcome(first, settled, "first"),
        outcome(second, settled, "second"),
        outcome(third, settled, "third"),
        outcome(sync.flush(), settled, "flush"),
      ];
      await triedOnce(sync);
      const announced = stalled(sync);
      stall(log, sync.revision);
      await announced;
      await new Promise((r) => setTimeout(r, 0));
      // Settled by the time users hear of the stall, not at close() (then CLOSED).
      expect(settled.sort()).toEqual(["first", "flush", "second", "third"]);
      expect(await Promise.all(outcomes)).toEqual([code, code, code, code]);
      expect(sync.stallReason?.code).toBe(code);
      expect(sync.pendingCount).toBe(3); // kept for a newer app
      await sync.close();
      const q = await sync.store.open("board", "device-1");
      expect((await q.load()).records.map((r) => r.name)).toEqual(["bump", "add", "add"]);
      await q.close();
    });
  }
});
