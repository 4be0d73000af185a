import { describe, expect, it } from "vitest";
import {
  decodeEntry,
  MAX_STATE_DEPTH,
  MemoryLog,
  MemorySnapshotStore,
  type SnapshotRecord,
  type StateSyncError,
} from "@statesync/core";
import { codeOf } from "./fixtures.js";
import { depthOf, nested, nestV2, openNest, olderSetDepth } from "./deep-models.js";

/**
 * A state nested deeper than `MAX_STATE_DEPTH` (docs/format.md, "Limits") where a replica meets
 * another boundary than compaction: the model switch, and its local snapshots.
 */

async function switchEntries(log: MemoryLog): Promise<number> {
  let n = 0;
  for await (const e of log.read(1, (await log.info()).latestRevision)) {
    const d = decodeEntry(e.data);
    if (d.ok && d.entry.kind === "switch") n++;
  }
  return n;
}

describe("a model switch of a state nested too deep", () => {
  it("is refused: the replica opens readable, not writable, says why, and writes again once the state is shallow", async () => {
    // Fresh-eyes trial: the switch entry was refused, yet the v2 replica opened `writable` and
    // every update failed.
    const log = new MemoryLog();
    const old = await openNest(log);
    await olderSetDepth(log, old, 300);
    const v2 = await openNest(log, { model: nestV2 });
    expect(v2.status).toBe("live");
    expect(depthOf(v2.state.tree)).toBe(300); // reads: the log's state migrated up
    expect(v2.upgradePending).toBe(true);
    expect(v2.writable).toBe(false);
    expect(v2.writeError?.code).toBe("VALIDATION");
    expect(v2.writeError?.details.upgradeRefused).toBe(true);
    expect(v2.writeError?.message).toContain(`deeper than ${MAX_STATE_DEPTH} levels`);
    expect(v2.errors.map((e) => e.code)).toEqual(["VALIDATION"]);
    const refused = await v2.update("bump", {}).catch((e: StateSyncError) => e);
    expect((refused as StateSyncError).code).toBe("VALIDATION");
    expect(await codeOf(v2.upgrade())).toBe("VALIDATION");
    expect(await switchEntries(log)).toBe(0);
    expect(v2.writable).toBe(false);

    // A version-1 writer makes the state shallow again: the next update switches and writes.
    await old.updateUnconditionally("setDepth", { levels: 3 });
    await v2.waitFor(old.revision);
    await v2.update("bump", {});
    expect(v2.writable).toBe(true);
    expect(v2.upgradePending).toBe(false);
    expect(await switchEntries(log)).toBe(1);
    expect(v2.state).toMatchObject({ n: 1, v2: true });
    await Promise.all([old.close(), v2.close()]);
  });
});

describe("upgrade({ dryRun: true })", () => {
  it("refuses as the switch would, saying so, writes nothing and leaves the replica as it was; resolves the base once the state can be carried", async () => {
    // `statesync migrate --dry-run` said "would switch" for a switch the real run refused.
    const log = new MemoryLog();
    const old = await openNest(log);
    await olderSetDepth(log, old, 300);
    const v2 = await openNest(log, { model: nestV2, upgrade: "manual" });
    const refused = await v2.upgrade({ dryRun: true }).catch((e: StateSyncError) => e);
    expect(refused).toMatchObject({
      code: "VALIDATION",
      details: { upgradeRefused: true, dryRun: true, revision: old.revision },
      message: expect.stringMatching(/deeper than 255 levels.*; dry run: nothing was written$/),
    });
    // A dry run changes nothing: not writable for the manual upgrade only, not for its refusal.
    expect(v2.writeError?.code).toBe("UPGRADE_PENDING");
    expect(await switchEntries(log)).toBe(0);
    expect(await codeOf(v2.upgrade({ dryRun: "yes" } as never))).toBe("VALIDATION");

    await old.updateUnconditionally("setDepth", { levels: 3 });
    expect(await v2.upgrade({ dryRun: true })).toEqual({ revision: old.revision });
    expect(v2.upgradePending).toBe(true);
    expect(await switchEntries(log)).toBe(0);
    await Promise.all([old.close(), v2.close()]);
  });
});

/** A store whose snapshots' `tree` is replaced by `tree` when set (a file tampered with). */
class TamperedStore extends MemorySnapshotStore {
  tree: unknown;
  override async load(key: string): Promise<SnapshotRecord | undefined> {
    const record = await super.load(key);
    if (record === undefined || this.tree === undefined) return record;
    return { ...record, state: { ...(record.state as object), tree: this.tree } };
  }
}

describe("local snapshots of a state nested too deep", () => {
  it("a stored state 200,000 levels deep is CORRUPT_SNAPSHOT at load: the replica rebuilds from the log", async () => {
    // Fresh-eyes trial: such a file with a recomputed checksum was used, and every later save
    // failed SNAPSHOT_FAILED with a raw RangeError (JSON.stringify overflowed the stack).
    const log = new MemoryLog();
    const store = new TamperedStore();
    const a = await openNest(log, { snapshots: store });
    await a.update("bump", {});
    await a.saveSnapshot();
    await a.close();
    store.tree = nested(200_000);
    const b = await openNest(log, { snapshots: store });
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(b.errors[0]!.message).toContain(`deeper than ${MAX_STATE_DEPTH} levels`);
    expect(b.stats.snapshotsRestored).toBe(0);
    expect(b.state).toEqual({ tree: [], blob: "", n: 1 });
    store.tree = undefined;
    expect(await store.load("nest")).toBeUndefined(); // discarded (the key is the model's name)
    await b.saveSnapshot(); // and saving works again
    await b.close();
  });

  it("a save of a state deeper than the limit fails SNAPSHOT_FAILED saying why, reported once", async () => {
    const log = new MemoryLog();
    const store = new MemorySnapshotStore();
    const a = await openNest(log, { snapshots: store });
    await olderSetDepth(log, a, 300);
    const failed = await a.saveSnapshot().catch((e: StateSyncError) => e);
    expect((failed as StateSyncError).code).toBe("SNAPSHOT_FAILED");
    expect((failed as StateSyncError).message).toContain(`deeper than ${MAX_STATE_DEPTH} levels`);
    expect(await codeOf(a.saveSnapshot())).toBe("SNAPSHOT_FAILED");
    expect(a.errors.map((e) => e.code)).toEqual(["SNAPSHOT_FAILED"]);
    await a.updateUnconditionally("setDepth", { levels: 3 });
    await a.saveSnapshot();
    expect(a.stats.snapshotsSaved).toBe(1);
    await a.close();
    const b = await openNest(log, { snapshots: store });
    expect(b.stats.snapshotsRestored).toBe(1);
    expect(b.errors).toEqual([]);
    await b.close();
  });
});
