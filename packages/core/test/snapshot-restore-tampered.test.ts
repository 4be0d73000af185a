import { describe, expect, it } from "vitest";
import {
  MemoryLog,
  MemorySnapshotStore,
  snapshotRecordSchema,
  StateSyncError,
  type SnapshotRecord,
} from "@statesync/core";
import { openNest } from "./deep-models.js";

/**
 * A local snapshot edited by hand, its checksum recomputed (a fresh-eyes trial): what no entry
 * of the log could have produced is refused at load (`CORRUPT_SNAPSHOT`) and the replica
 * rebuilds its state from the log, as for a damaged file. (A state the log could have produced
 * cannot be told from a genuine one: docs/guarantees.md, "Known limits".)
 */

/** A store whose loaded records are rewritten by `edit` when set (a file tampered with). */
class TamperedStore extends MemorySnapshotStore {
  edit: ((record: SnapshotRecord) => SnapshotRecord) | undefined;
  override async load(key: string): Promise<SnapshotRecord | undefined> {
    const record = await super.load(key);
    return record === undefined || this.edit === undefined ? record : this.edit(record);
  }
}

async function savedOnce(): Promise<{ log: MemoryLog; store: TamperedStore }> {
  const log = new MemoryLog();
  const store = new TamperedStore();
  const a = await openNest(log, { snapshots: store });
  await a.update("bump", {});
  await a.saveSnapshot();
  await a.close();
  return { log, store };
}

describe("a hand-edited local snapshot", () => {
  it("with an own __proto__ key in its state (which every entry refuses) is CORRUPT_SNAPSHOT: rebuilt from the log", async () => {
    // Before: used as it was; the replica then held a state no replica that replayed the log
    // holds, and its next compaction failed on the key.
    const { log, store } = await savedOnce();
    store.edit = (r) => ({
      ...r,
      state: { ...(r.state as object), tree: JSON.parse('[{"__proto__": {"admin": true}}]') },
    });
    const b = await openNest(log, { snapshots: store });
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(b.errors[0]!.message).toContain("__proto__");
    expect(b.stats.snapshotsRestored).toBe(0);
    expect(b.state).toEqual({ tree: [], blob: "", n: 1 });
    store.edit = undefined;
    expect(await store.load("nest")).toBeUndefined(); // discarded
    await b.close();
  });

  it("at revision 0 with a state other than the model's initial one is CORRUPT_SNAPSHOT: rebuilt from the log", async () => {
    // Before: the replica replayed the whole log on top of the edited state and kept the edit.
    const { log, store } = await savedOnce();
    store.edit = (r) => ({ ...r, revision: 0, state: { tree: [], blob: "edited", n: 40 } });
    const b = await openNest(log, { snapshots: store });
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(b.errors[0]!.message).toContain("revision 0");
    expect(b.state).toEqual({ tree: [], blob: "", n: 1 });
    await b.close();
  });

  it("at at revision 0 with the model's initial state is CORRUPT_SNAPSHOT too: no replica saves one there", async () => {
    const { log, store } = await savedOnce();
    // Before: restored, then the log's genesis entry at revision 1 was "a second genesis entry"
    // (CORRUPT_ENTRY), a misleading report of a sound log.
    store.edit = (r) => ({ ...r, revision: 0, state: { tree: [], blob: "", n: 0 } });
    const b = await openNest(log, { snapshots: store });
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(b.stats.snapshotsRestored).toBe(0);
    expect(b.state).toEqual({ tree: [], blob: "", n: 1 });
    await b.close();
  });
});

describe("a hand-edited local snapshot's table of applied origins", () => {
  /** Loads `text` as a store loads its stored text: JSON, then `snapshotRecordSchema`. */
  class TextStore extends MemorySnapshotStore {
    text: string | undefined;
    override async load(key: string): Promise<SnapshotRecord | undefined> {
      const record = await super.load(key);
      if (record === undefined || this.text === undefined) return record;
      const parsed = snapshotRecordSchema.safeParse(JSON.parse(this.text));
      if (!parsed.success) {
        throw new StateSyncError("CORRUPT_SNAPSHOT", `snapshot ${key} has an invalid shape`);
      }
      return parsed.data as SnapshotRecord;
    }
  }

  const rowsOf = (n: number, id = (i: number) => `o${i}`) =>
    Array.from({ length: n }, (_, i) => [id(i), 1, 1]);

  it.each([
    ["2,001 rows (entries carry at most 2,000)", rowsOf(2001)],
    ["an origin id with a space", [["has space", 1, 1]]],
    ["an origin id of 65 characters", [["x".repeat(65), 1, 1]]],
  ])("with %s is CORRUPT_SNAPSHOT, and the replica compacts", async (_name, origins) => {
    // A trial: such a table was loaded, and every compaction (and switch) of that replica then
    // failed VALIDATION "the snapshot entry cannot be stored", for as long as it kept the table.
    const log = new MemoryLog();
    const store = new TextStore();
    const a = await openNest(log, { snapshots: store });
    await a.update("bump", {});
    await a.saveSnapshot();
    await a.close();
    const saved = (await store.load("nest"))!;
    store.text = JSON.stringify({ ...saved, origins });
    const b = await openNest(log, { snapshots: store });
    expect(b.errors.map((e) => e.code)).toEqual(["CORRUPT_SNAPSHOT"]);
    expect(b.stats.snapshotsRestored).toBe(0);
    expect(b.state).toEqual({ tree: [], blob: "", n: 1 });
    await expect(b.compact()).resolves.toBeDefined();
    await b.close();
  });

  it("of 2,000 rows of valid ids is restored", async () => {
    const log = new MemoryLog();
    const store = new TextStore();
    const a = await openNest(log, { snapshots: store });
    await a.update("bump", {});
    await a.saveSnapshot();
    await a.close();
    const saved = (await store.load("nest"))!;
    store.text = JSON.stringify({ ...saved, origins: rowsOf(2000) });
    const b = await openNest(log, { snapshots: store });
    expect(b.errors).toEqual([]);
    expect(b.stats.snapshotsRestored).toBe(1);
    await b.close();
  });
});
