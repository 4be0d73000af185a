/**
 * The pending-store conformance cases of what a store says it did with each damaged record
 * (`DamagedPendingRecord`: kept aside, left in place, or deleted), which the engine counts in its
 * `CORRUPT_PENDING` report. Each case is a check function (exported, so that the kit's own tests
 * run it against stores broken on purpose) registered by {@link damagedRecordCases}.
 */
import { expect, it } from "vitest";
import { damagedError } from "../pending/pending-op.js";
import {
  DAMAGED_CONTENT_CHARS,
  type DamagedPendingRecord,
  type PendingRecord,
  type PendingStore,
} from "../pending/pending-store.js";

/** What became of a damaged record, as its store says. */
export type DamagedFate = "kept aside" | "left in place" | "deleted";

/** The harness hooks these cases use (see `PendingStoreHarness`). */
export interface DamagedRecordHarness {
  store: PendingStore;
  reopen(): Promise<PendingStore>;
  corrupt(key: string, owner: string, seq: number): Promise<void>;
  corruptImmovable?(key: string, owner: string, seq: number): Promise<() => Promise<void>>;
}

/** A pending record for these cases. */
function record(seq: number): PendingRecord {
  return {
    format: 1,
    seq,
    kind: "update",
    name: "add",
    args: { long: "x".repeat(200) },
    queuedAt: 1_700_000_000_000 + seq,
    mv: 1,
  };
}

/**
 * The one fate `d` reports (`DamagedPendingRecord`'s contract): `keptAs` (a non-empty place),
 * `leftInPlace: true`, or neither (deleted, then with its `content`). Fails on a record that
 * claims two fates, or a fate in another shape (`leftInPlace: false`, `keptAs: ""`).
 */
export function fateOf(d: DamagedPendingRecord): DamagedFate {
  const label = `damaged seq ${d.seq}`;
  expect(typeof d.reason === "string" && d.reason.length > 0, `${label}: a reason`).toBe(true);
  const kept = d.keptAs !== undefined;
  const left = d.leftInPlace !== undefined;
  expect(kept && left, `${label}: both kept aside and left in place`).toBe(false);
  if (kept) {
    expect(typeof d.keptAs === "string" && d.keptAs.length > 0, `${label}: keptAs`).toBe(true);
    return "kept aside";
  }
  if (left) {
    expect(d.leftInPlace, `${label}: leftInPlace is true or absent`).toBe(true);
    return "left in place";
  }
  expect(typeof d.content, `${label}: deleted, so what it held is its content`).toBe("string");
  expect(d.content!.length, `${label}: content`).toBeLessThanOrEqual(DAMAGED_CONTENT_CHARS);
  return "deleted";
}

/**
 * Checks that `damaged` reports one fate per record and that the engine's `CORRUPT_PENDING`
 * report of them counts alike: kept aside + left in place + deleted = damaged. Returns the seqs
 * of each fate.
 */
export function checkReport(
  damaged: readonly DamagedPendingRecord[],
): Record<DamagedFate, number[]> {
  const seqs: Record<DamagedFate, number[]> = {
    "kept aside": [],
    "left in place": [],
    deleted: [],
  };
  for (const d of damaged) seqs[fateOf(d)].push(d.seq);
  if (damaged.length === 0) return seqs; // no report
  const report = damagedError({ key: "k", owner: "app", origin: "o" }, damaged);
  const counted = (fate: DamagedFate) =>
    Number(new RegExp(`(\\d+) ${fate}`).exec(report.message)?.[1] ?? 0);
  const counts = {
    "kept aside": counted("kept aside"),
    "left in place": counted("left in place"),
    deleted: counted("deleted"),
  };
  expect(counts, "the CORRUPT_PENDING report's counts").toEqual({
    "kept aside": seqs["kept aside"].length,
    "left in place": seqs["left in place"].length,
    deleted: seqs.deleted.length,
  });
  expect(report.details.count).toBe(damaged.length);
  expect(counts["kept aside"] + counts["left in place"] + counts.deleted).toBe(damaged.length);
  return seqs;
}

/**
 * Every store: each damaged record reports one fate, the report's counts add up, and the next
 * loads bear the fates out: a record left in place is handed back again (by the same queue and
 * after a reopen), one kept aside or deleted never is.
 */
export async function checkDamagedFates(h: DamagedRecordHarness): Promise<void> {
  const q = await h.store.open("k", "app");
  for (const seq of [1, 2, 3, 4]) await q.put(record(seq));
  await h.corrupt("k", "app", 2);
  await h.corrupt("k", "app", 4);
  const first = await q.load();
  expect(first.records.map((r) => r.seq)).toEqual([1, 3]);
  expect((first.damaged ?? []).map((d) => d.seq)).toEqual([2, 4]);
  const left = checkReport(first.damaged ?? [])["left in place"];
  const again = await q.load();
  expect(
    (again.damaged ?? []).map((d) => d.seq),
    "handed back again: left in place",
  ).toEqual(left);
  checkReport(again.damaged ?? []);
  await q.close();
  const other = await h.reopen();
  const q2 = await other.open("k", "app");
  const later = await q2.load();
  expect(later.records.map((r) => r.seq)).toEqual([1, 3]);
  expect(
    (later.damaged ?? []).map((d) => d.seq),
    "after a reopen: left in place",
  ).toEqual(left);
  expect(later.nextSeq).toBe(5);
  await q2.close();
  await other.close?.();
}

/**
 * With `corruptImmovable`: a damaged record the store can neither move aside nor delete stays,
 * `leftInPlace: true`, out of `records`, its seq counted; every load hands it back (the same
 * queue, another store instance), until it can be moved or deleted: then once more with that
 * fate, and never again. Without the hook (a store that cannot leave records in place, such as
 * one in memory), a damaged record is never reported left in place.
 */
export async function checkLeftInPlace(h: DamagedRecordHarness): Promise<void> {
  const q = await h.store.open("k", "app");
  for (const seq of [1, 2, 3, 4]) await q.put(record(seq));
  if (h.corruptImmovable === undefined) {
    await h.corrupt("k", "app", 2);
    const loaded = await q.load();
    expect((loaded.damaged ?? []).map((d) => d.seq)).toEqual([2]);
    const fates = checkReport(loaded.damaged ?? []);
    expect(fates["left in place"], "a store that cannot leave one: none left in place").toEqual([]);
    await q.close();
    return;
  }
  const release = await h.corruptImmovable("k", "app", 2);
  await h.corrupt("k", "app", 3); // movable: the one beside it is kept aside or deleted
  const first = await q.load();
  expect(first.records.map((r) => r.seq)).toEqual([1, 4]);
  expect(first.nextSeq).toBe(5);
  expect((first.damaged ?? []).map((d) => d.seq)).toEqual([2, 3]);
  const fates = checkReport(first.damaged ?? []);
  expect(fates["left in place"], "the record it could not move").toEqual([2]);
  const stays = async (queue: typeof q) => {
    const loaded = await queue.load();
    expect(loaded.records.map((r) => r.seq)).toEqual([1, 4]);
    expect(loaded.nextSeq).toBe(5);
    expect(loaded.damaged?.map((d) => [d.seq, fateOf(d)])).toEqual([[2, "left in place"]]);
  };
  await stays(q);
  await q.close();
  const other = await h.reopen();
  const q2 = await other.open("k", "app");
  await stays(q2);
  await release();
  const moved = await q2.load();
  expect(moved.damaged?.map((d) => d.seq)).toEqual([2]);
  expect(fateOf(moved.damaged![0]!), "once it can be moved").not.toBe("left in place");
  expect(await q2.load()).toEqual({ records: [record(1), record(4)], nextSeq: 5 });
  await q2.close();
  await other.close?.();
}

/**
 * Registers the damaged-record cases (called inside the suite's `describe`): see
 * {@link checkDamagedFates} and {@link checkLeftInPlace}.
 */
export function damagedRecordCases(
  withStore: (fn: (h: DamagedRecordHarness) => Promise<void>) => Promise<void>,
): void {
  it("hands a damaged record back once as `damaged`, never in records; its seq still counts", () =>
    withStore(async ({ store, corrupt, reopen }) => {
      // Before, stores dropped it in silence: queued edits were lost and nobody was told.
      const q = await store.open("k", "app");
      for (const seq of [1, 2, 3]) await q.put(record(seq));
      await corrupt("k", "app", 2);
      await corrupt("k", "app", 3);
      const first = await q.load();
      expect(first.records.map((r) => r.seq)).toEqual([1]);
      expect(first.nextSeq).toBe(4);
      expect((first.damaged ?? []).map((d) => d.seq)).toEqual([2, 3]);
      for (const d of first.damaged ?? []) {
        expect(d.reason.length).toBeGreaterThan(0);
        // Where it can be looked at: kept aside, or what it held.
        expect(d.keptAs !== undefined || d.content !== undefined).toBe(true);
      }
      // Taken out of the queue by that load: not handed back, never blocking the others.
      const again = await q.load();
      expect(again.records.map((r) => r.seq)).toEqual([1]);
      expect(again.damaged ?? []).toEqual([]);
      await q.put(record(4));
      await q.delete([1]);
      await q.close();
      const other = await reopen();
      const q2 = await other.open("k", "app");
      const later = await q2.load();
      expect(later.records.map((r) => r.seq)).toEqual([4]);
      expect(later.damaged ?? []).toEqual([]);
      expect(later.nextSeq).toBe(5);
      await q2.clear();
      await q2.close();
      // The highest seq damaged: nextSeq stays above it after a reopen.
      const q3 = await other.open("k", "app");
      await q3.put(record(5));
      await q3.close();
      await corrupt("k", "app", 5);
      const q4 = await other.open("k", "app");
      expect((await q4.load()).damaged?.map((d) => d.seq)).toEqual([5]);
      await q4.close();
      const third = await reopen();
      const q5 = await third.open("k", "app");
      expect(await q5.load()).toEqual({ records: [], nextSeq: 6 });
      await q5.close();
      await third.close?.();
      await other.close?.();
    }));

  it("says of each damaged record one fate (kept aside, left in place, deleted) that the next loads bear out; the report's counts add up", () =>
    withStore(checkDamagedFates));

  it("leaves a damaged record it cannot move or delete in place, says so, and hands it back at every load until it can", () =>
    withStore(checkLeftInPlace));
}
