import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import {
  createSynchronizer,
  defineModel,
  MemoryLog,
  MemoryPendingStore,
  pendingQueue,
  type StateSyncError,
} from "@statesync/core";
import { counterModel } from "./fixtures.js";

/**
 * Regression test (fresh-eyes trial): an option misspelt (`snapshotsDir` for `snapshotDir`,
 * `snapshotz` for `snapshots`) was dropped in silence, so the replica ran without what the user
 * asked for. Unknown option keys are now `VALIDATION`, naming the key.
 */
describe("createSynchronizer options", () => {
  it("refuses a key it does not know, naming it", async () => {
    const error = (await createSynchronizer({
      log: new MemoryLog(),
      model: counterModel,
      snapshotz: false,
    } as never).catch((e: unknown) => e)) as StateSyncError;
    expect(error.code).toBe("VALIDATION");
    expect(error.message).toMatch(/Unrecognized key: "snapshotz"/);
  });

  it("refuses unknown keys inside options too: compaction, update options, pendingQueue", async () => {
    const log = new MemoryLog();
    const nested = (await createSynchronizer({
      log,
      model: counterModel,
      compaction: { everyEntry: 5 },
    } as never).catch((e: unknown) => e)) as StateSyncError;
    expect([nested.code, nested.message]).toEqual([
      "VALIDATION",
      expect.stringMatching(/Unrecognized key: "everyEntry"/),
    ]);
    const sync = await createSynchronizer({ log, model: counterModel });
    for (const options of [{ outcomeTimeoutMS: 1000 }, { maxAttempt: 3 }]) {
      const error = (await sync
        .update("increment", { by: 1 }, options as never)
        .catch((e: unknown) => e)) as StateSyncError;
      expect(error.code).toBe("VALIDATION");
      expect(error.message).toMatch(/Unrecognized key/);
    }
    expect(sync.revision).toBe(1); // nothing appended
    expect(() =>
      pendingQueue({ store: new MemoryPendingStore(), owner: "a", onwer: "b" } as never),
    ).toThrow(/Unrecognized key: "onwer"/);
    await sync.close();
  });

  it("takes every documented key", async () => {
    const sync = await createSynchronizer({
      log: new MemoryLog(),
      model: counterModel,
      snapshots: false,
      snapshotKey: "k",
      snapshotEvery: 10,
      clientId: "client-1",
      live: true,
      waitFor: "synced",
      contention: "retry",
      upgrade: "on-open",
      compaction: false,
      pending: false,
      onError: () => undefined,
      onStatus: () => undefined,
    });
    expect(sync.status).not.toBe("closed");
    await sync.close();
  });
});

/** What a wrong value says (a new user's trial read zod's bare "Invalid input" and "nonoptional"). */
describe("option and model messages name what is expected", () => {
  it("compaction: true says what compaction takes", async () => {
    const error = (await createSynchronizer({
      log: new MemoryLog(),
      model: counterModel,
      compaction: true,
    } as never).catch((e: unknown) => e)) as StateSyncError;
    expect(error.code).toBe("VALIDATION");
    expect(error.message).toMatch(/expected false or \{ everyEntries\?, everyBytes\?, jitter\? \}/);
  });

  it("a command without args says it needs a schema", () => {
    let error: StateSyncError | undefined;
    try {
      defineModel({
        name: "no-args",
        state: z.object({ n: z.number() }),
        initial: { n: 0 },
        commands: { inc: { apply: (d: { n: number }) => void (d.n += 1) } } as never,
      });
    } catch (e) {
      error = e as StateSyncError;
    }
    expect(error?.code).toBe("VALIDATION");
    expect(error?.message).toMatch(/a command needs an args schema: z\.object\(\{\}\) for none/);
    expect(error?.message).toMatch(/commands\.inc\.args/);
  });
});
