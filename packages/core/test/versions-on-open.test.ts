import { describe, expect, it } from "vitest";
import { createSynchronizer, MemoryLog, type Model, type StateSyncError } from "@statesync/core";
import { until } from "./fixtures.js";
import { v1, v2 } from "./version-models.js";

/**
 * `upgrade: "on-open"` (docs/versions.md): a replica of a newer model version switches the log
 * once it has caught up after opening, whatever `waitFor` said. Found by a fresh-eyes trial: a
 * replica opened with `waitFor: "restored"` (the browser's default) stayed `upgradePending`, the
 * log at the older version, until its first append.
 */
function open<S>(log: MemoryLog, model: Model<S, any>, extra: Record<string, unknown> = {}) {
  return createSynchronizer({ log: log.handle(), model, compaction: false, ...extra });
}

/** A v1 log holding genesis and one update, and a live v1 replica on it. */
async function v1Log() {
  const log = new MemoryLog();
  const old = await open(log, v1, { clientId: "old" });
  await old.update("add", { id: "x" });
  return { log, old };
}

describe('upgrade: "on-open" switches once caught up, whatever waitFor says (MemoryLog)', () => {
  it('waitFor "restored": the switch is written without an append of its own', async () => {
    const { log, old } = await v1Log();
    const b = await open(log, v2, { clientId: "b", waitFor: "restored" });
    await until(() => log.size === 3); // the log holds the switch
    await b.waitFor(3);
    expect(b.upgradePending).toBe(false);
    const history = await b.history();
    expect(history.map((h) => h.kind)).toEqual(["genesis", "update", "switch"]);
    expect(history[2]).toMatchObject({ clientId: "b", modelVersion: 2 });
    expect(log.size).toBe(3); // the switch, nothing else of b's
    expect(b.state).toEqual({ ids: ["x"], tags: [] });
    await until(() => old.status === "stalled");
    expect(old.stallReason?.code).toBe("MODEL_UPGRADED");
    await Promise.all([old.close(), b.close()]);
  });

  it('waitFor "synced": switched by the time the replica has opened', async () => {
    const { log, old } = await v1Log();
    const b = await open(log, v2, { clientId: "b", waitFor: "synced" });
    expect(b.upgradePending).toBe(false);
    expect(b.revision).toBe(3);
    expect((await b.history()).map((h) => h.kind)).toEqual(["genesis", "update", "switch"]);
    await Promise.all([old.close(), b.close()]);
  });

  it("offline at open: the switch is written once the replica reaches the log", async () => {
    const { log, old } = await v1Log();
    log.setOffline(true);
    const b = await open(log, v2, { clientId: "b", waitFor: "synced" });
    expect(b.status).toBe("offline"); // it has not read the log's version yet
    expect(log.size).toBe(2);
    log.setOffline(false);
    await until(() => log.size === 3);
    await b.waitFor(3);
    expect(b.upgradePending).toBe(false);
    expect((await b.history()).map((h) => h.kind)).toEqual(["genesis", "update", "switch"]);
    expect(log.size).toBe(3);
    await Promise.all([old.close(), b.close()]);
  });

  it('upgrade: "manual" with waitFor "restored" still writes nothing', async () => {
    const { log, old } = await v1Log();
    const b = await open(log, v2, { waitFor: "restored", upgrade: "manual" });
    await until(() => b.status === "live");
    await b.synced();
    expect(b.upgradePending).toBe(true);
    expect(log.size).toBe(2);
    await Promise.all([old.close(), b.close()]);
  });
  it("a log created by a newer version: MODEL_UPGRADED says created, not switched", async () => {
    // A trial: a v1 app on a stream deleted and created again by v2 read "the log switched to
    // v2", of a log that never held v1.
    const log = new MemoryLog();
    await (await open(log, v2)).close();
    const refused = await open(log, v1).catch((e: StateSyncError) => e);
    expect(refused).toMatchObject({ code: "MODEL_UPGRADED", details: { needed: 2, version: 1 } });
    expect((refused as StateSyncError).message).toMatch(
      /^the log was created by .* v2; this client runs v1/,
    );
  });
});
