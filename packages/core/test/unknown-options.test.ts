import { describe, expect, it } from "vitest";
import { createSynchronizer, MemoryLog, type StateSyncError } from "@statesync/core";
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
