import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  stateHash,
  type StateSyncError,
} from "@statesync/core";

/**
 * Recipes and command `apply`s must be synchronous (README, "Recipes are synchronous"). One that
 * returns a promise (an `async` function) or any thenable is refused wherever it runs, alike:
 * a conditional update rejects `VALIDATION` and appends nothing; a command entry is a
 * `COMMAND_FAILED` no-op on every replica, live or replaying the log. And the promise it returned
 * never crashes the process: an `async apply` that awaits and then writes its draft would throw
 * on the revoked draft (`Cannot perform 'set' on a proxy that has been revoked`) in a promise no
 * one handled, and Node exits on an unhandled rejection (a fresh-eyes trial: every process
 * holding a replica of the log exited, and so did every replica opened on it later).
 */
const model = defineModel({
  name: "async",
  state: z.object({ n: z.number() }),
  initial: { n: 0 },
  commands: {
    inc: {
      args: z.object({}),
      apply(d) {
        d.n += 1;
      },
    },
    /** Awaits, then writes: after Immer has revoked the draft. */
    late: {
      args: z.object({}),
      async apply(d) {
        await null;
        d.n = 99;
      },
    },
    /** Writes before returning its promise: the write lands in the draft. */
    eager: {
      args: z.object({}),
      async apply(d) {
        d.n = 99;
      },
    },
    /** Returns a promise that rejects. */
    rejects: {
      args: z.object({}),
      async apply() {
        throw new Error("no");
      },
    },
    /** Writes, then returns a thenable that is no promise. */
    thenable: {
      args: z.object({}),
      apply(d) {
        d.n = 5;
        return { then() {} } as never;
      },
    },
  },
});
const ASYNC = ["late", "eager", "rejects", "thenable"] as const;

let unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => unhandled.push(e);
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", onUnhandled);
});
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

/** Lets the continuations of the recipes' promises run (they would throw by now). */
const settle = () => new Promise((r) => setTimeout(r, 20));

async function openReplica(log: MemoryLog, options: { live?: boolean; queued?: boolean } = {}) {
  const errors: StateSyncError[] = [];
  const sync = await createSynchronizer({
    log: log.handle(),
    model,
    live: options.live ?? true,
    snapshots: false,
    compaction: false,
    onError: (e) => errors.push(e),
    ...(options.queued
      ? { pending: pendingQueue({ store: new MemoryPendingStore(), owner: "device-1" }) }
      : {}),
  });
  return Object.assign(sync, { errors });
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e as StateSyncError,
  );

const failedAt = (errors: StateSyncError[]) =>
  errors.filter((e) => e.code === "COMMAND_FAILED").map((e) => e.details.revision);

describe("a recipe or command that returns a promise", () => {
  it("is refused VALIDATION as a conditional recipe, alone or in a batch, appending nothing", async () => {
    const log = new MemoryLog();
    const a = await openReplica(log);
    const recipes = [
      async (d: { n: number }) => {
        await null;
        d.n = 99;
      },
      async (d: { n: number }) => {
        d.n = 99;
      },
    ];
    for (const recipe of recipes) {
      expect(await failure(a.update(recipe as never))).toMatchObject({ code: "VALIDATION" });
    }
    // In flight together: one batch, one shared draft.
    const batch = await Promise.all([
      failure(a.update((d) => void (d.n += 1))),
      failure(a.update(recipes[0] as never)),
      failure(a.update((d) => void (d.n += 1))),
    ]);
    expect(batch.map((e) => e?.code)).toEqual([undefined, "VALIDATION", undefined]);
    await settle();
    expect(a.state.n).toBe(2);
    expect(unhandled).toEqual([]);
    await a.close();
  });

  it("is refused VALIDATION as a conditional command, alone or in a batch, appending nothing", async () => {
    const log = new MemoryLog();
    const a = await openReplica(log);
    const before = a.revision;
    for (const name of ASYNC) {
      const error = await failure(a.update(name, {}));
      expect(error, name).toMatchObject({ code: "VALIDATION" });
      expect(error!.message, name).toMatch(/must be synchronous/);
    }
    expect(a.revision).toBe(before);
    expect(a.state.n).toBe(0);
    const batch = await Promise.all([
      failure(a.update("inc", {})),
      ...ASYNC.map((name) => failure(a.update(name, {}))),
      failure(a.update("inc", {})),
    ]);
    expect(batch.map((e) => e?.code)).toEqual([
      undefined,
      ...ASYNC.map(() => "VALIDATION"),
      undefined,
    ]);
    await settle();
    expect(a.state.n).toBe(2);
    expect(unhandled).toEqual([]);
    await a.close();
  });

  it("is a COMMAND_FAILED no-op as an unconditional command on every replica, live or replaying", async () => {
    const log = new MemoryLog();
    const a = await openReplica(log);
    const b = await openReplica(log);
    const failed: number[] = [];
    await a.updateUnconditionally("inc", {});
    for (const name of ASYNC) {
      const error = await failure(a.updateUnconditionally(name, {}));
      expect(error, name).toMatchObject({
        code: "COMMAND_FAILED",
        details: { command: name, reason: "threw", committed: true },
      });
      expect(error!.message, name).toMatch(/must be synchronous/);
      failed.push(error!.details.revision as number);
      await a.updateUnconditionally("inc", {});
    }
    await b.waitFor(a.revision);
    await settle();
    // A replica opened later replays the log, its entries in one batch.
    const c = await openReplica(log, { live: false });
    await settle();
    for (const r of [a, b, c]) {
      expect(r.revision).toBe(a.revision);
      expect(r.state.n).toBe(5);
      expect(stateHash(r.state)).toBe(stateHash(a.state));
      expect(failedAt(r.errors)).toEqual(failed);
    }
    // stateAt replays the same entries.
    for (const revision of failed)
      expect((await c.stateAt(revision)).n).toBe(failed.indexOf(revision) + 1);
    expect((await c.stateAt(a.revision)).n).toBe(5);
    await settle();
    expect(unhandled).toEqual([]);
    await Promise.all([a.close(), b.close(), c.close()]);
  });

  it("is refused with a pending queue, and never shows in the optimistic state", async () => {
    const log = new MemoryLog();
    const a = await openReplica(log, { queued: true });
    log.setOffline(true);
    const calls = [
      ...ASYNC.map((name) => failure(a.update(name, {}))),
      failure(
        a.update((async (d: { n: number }) => {
          await null;
          d.n = 99;
        }) as never),
      ),
      ...ASYNC.map((name) => failure(a.updateUnconditionally(name, {}))),
      failure(a.update("inc", {})),
    ];
    expect(a.optimisticState.n).toBe(1);
    log.setOffline(false);
    const errors = await Promise.all(calls);
    expect(errors.map((e) => e?.code)).toEqual([
      ...ASYNC.map(() => "UPDATE_REFUSED"),
      "UPDATE_REFUSED",
      ...ASYNC.map(() => "UPDATE_REFUSED"),
      undefined,
    ]);
    expect(errors.map((e) => (e?.cause as StateSyncError | undefined)?.code)).toEqual([
      ...ASYNC.map(() => "VALIDATION"),
      "VALIDATION",
      ...ASYNC.map(() => "COMMAND_FAILED"),
      undefined,
    ]);
    await settle();
    expect(a.state.n).toBe(1);
    expect(a.optimisticState.n).toBe(1);
    expect(unhandled).toEqual([]);
    await a.close();
  });
});
