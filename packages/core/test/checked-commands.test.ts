import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  decodeEntry,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  stateHash,
  type StateSyncError,
} from "@statesync/core";

/**
 * Unconditional commands are checked where they are applied (docs/guarantees.md, "Unconditional
 * commands"): a command entry of format 3 whose result fails the model's schema is a
 * `COMMAND_FAILED` no-op on every replica alike, batched or not; command entries of formats 1
 * and 2 keep their unchecked semantics.
 */
export const stock = defineModel({
  name: "stock",
  state: z.object({ qty: z.number().nonnegative() }),
  initial: { qty: 0 },
  commands: {
    add: {
      args: z.object({ n: z.number().int() }),
      apply(d, { n }) {
        d.qty += n;
      },
    },
    take: {
      args: z.object({ n: z.number().int() }),
      apply(d, { n }) {
        d.qty -= n;
      },
    },
  },
});

async function openStock(log: MemoryLog, live = true) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log: log.handle(),
    model: stock,
    live,
    snapshots: false,
    compaction: false,
    onError: (e) => errors.push(e),
  });
  return Object.assign(sync, { errors });
}

const failedAt = (errors: StateSyncError[]) =>
  errors.filter((e) => e.code === "COMMAND_FAILED").map((e) => e.details.revision);

describe("checked unconditional commands", () => {
  it("make a command that would break the schema a no-op on a live and a batched replica alike", async () => {
    const log = new MemoryLog();
    const live = await openStock(log);
    await live.updateUnconditionally("add", { n: 1 });
    const taken = await live.updateUnconditionally("take", { n: 5 }).catch((e: unknown) => e);
    expect(taken).toMatchObject({
      code: "COMMAND_FAILED",
      details: { command: "take", reason: "invalid-state", committed: true },
    });
    expect((taken as Error).message).toMatch(/qty/);
    const bad = (taken as StateSyncError).details.revision as number;
    // With the first take applied, these would bring qty back to -4 + 4 - 4: an invalid state
    // in the middle of the batch, fixed later in it, must still make that take a no-op.
    await live.updateUnconditionally("add", { n: 4 });
    await live.updateUnconditionally("take", { n: 4 });
    expect(live.state.qty).toBe(1);

    const late = await openStock(log, false); // catches up with all of it in one batch
    expect(late.revision).toBe(live.revision);
    expect(late.state.qty).toBe(1);
    expect(stateHash(late.state)).toBe(stateHash(live.state));
    expect(failedAt(live.errors)).toEqual([bad]);
    expect(failedAt(late.errors)).toEqual([bad]);
    expect(late.errors[0]!.message).toMatch(/fails the model's schema/);

    const compacted = await live.compact(); // the state is valid: compaction goes through
    expect(compacted.revision).toBeGreaterThan(live.revision - 1);
    const fresh = await openStock(log, false);
    expect(fresh.state.qty).toBe(1);
    await fresh.close();
    await Promise.all([live.close(), late.close()]);
  });

  it("writes command entries as format 3, and still applies older ones unchecked", async () => {
    const log = new MemoryLog();
    const a = await openStock(log);
    const { revision } = await a.updateUnconditionally("add", { n: 1 });
    let data: Uint8Array | undefined;
    for await (const e of log.read(revision, revision)) data = e.data;
    const decoded = decodeEntry(data!);
    expect(decoded.ok && decoded.entry.v).toBe(3);
    // An older SDK wrote this one: it makes the state invalid on every replica, unchecked.
    const old = (v: number, name: string, n: number) =>
      JSON.stringify({ v, kind: "command", ts: 1, seed: 1, client: "old", name, args: { n } });
    log.injectRaw(old(1, "take", 5));
    log.injectRaw(old(2, "take", 1));
    // Checked commands on that invalid state: kept only when the state after them is valid.
    const stillBad = log.injectRaw(old(3, "take", 1));
    const fixed = log.injectRaw(old(3, "add", 10));
    await a.waitFor(fixed);
    const b = await openStock(log, false);
    for (const r of [a, b]) {
      expect(r.state.qty).toBe(5);
      expect(failedAt(r.errors)).toEqual([stillBad]);
    }
    await Promise.all([a.close(), b.close()]);
  });

  it("refuses a queued command whose result fails the schema, with COMMAND_FAILED as the cause", async () => {
    const log = new MemoryLog();
    const a = await createSynchronizer({
      log,
      model: stock,
      snapshots: false,
      compaction: false,
      pending: pendingQueue({ store: new MemoryPendingStore(), owner: "device-1" }),
    });
    await a.updateUnconditionally("add", { n: 1 });
    const refused = await a.updateUnconditionally("take", { n: 5 }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "UPDATE_REFUSED" });
    expect((refused as Error).cause).toMatchObject({
      code: "COMMAND_FAILED",
      details: { reason: "invalid-state", committed: true },
    });
    expect(a.pendingCount).toBe(0);
    expect(a.state.qty).toBe(1);
    expect(a.optimisticState.qty).toBe(1);
    await a.close();
  });
});
