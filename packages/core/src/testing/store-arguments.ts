import { expect, it } from "vitest";
import { isStateSyncError } from "../errors.js";
import type { PendingRecord, PendingStore } from "../pending/pending-store.js";
import type { SnapshotRecord, SnapshotStore } from "../snapshot-store.js";

/**
 * The conformance cases of bad arguments, shared by the snapshot and pending store suites: a key
 * that is no non-empty string, a record that fails its port's schema, a seq list that is no list
 * of seqs. Each call must reject `VALIDATION` (never a raw `TypeError`, never a synchronous
 * throw) and write nothing: what a later load returns is what was there before. A key the
 * record's schema does not know is left out of what is stored, as `load` leaves it out, whatever
 * it holds (a `BigInt` there made `JSON.stringify` throw).
 */

/** Values that are no store key. The object and the array turn into "k" when made a string. */
const NOT_KEYS: ReadonlyArray<readonly [string, unknown]> = [
  ["null", null],
  ["undefined", undefined],
  ["a number", 5],
  ["a boolean", true],
  ["an object", { toString: () => "k" }],
  ["an array", ["k"]],
  ["the empty string", ""],
];

/** Values no JSON text holds, as a state or as command arguments. */
function notJson(): Array<readonly [string, unknown]> {
  const cycle: Record<string, unknown> = { a: 1 };
  cycle.self = cycle;
  const holes: unknown[] = [1];
  holes[2] = 3;
  return [
    ["undefined", undefined],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["an undefined member", { a: undefined }],
    ["an array with a hole", holes],
    ["a function", () => 1],
    ["a bigint", BigInt(1)],
    ["a symbol", Symbol("s")],
    ["a Date", new Date(0)],
    ["a Map", new Map([[1, 2]])],
    ["a cycle", cycle],
  ];
}

/** `record` without `key`, or with `key` set to `value` (the type is what is being tested). */
function altered(record: object, key: string, value?: unknown, remove = false): unknown {
  const copy: Record<string, unknown> = { ...record };
  if (remove) delete copy[key];
  else copy[key] = value;
  return copy;
}

const show = (v: unknown): string =>
  typeof v === "string" || Array.isArray(v) ? JSON.stringify(v) : String(v);

/** A field set to a bad value, and what to call the value (default: the value shown). */
type BadField = readonly [field: string, value: unknown, label?: string];

/**
 * Values that are no record at all, then `good` without each of `required`, then `good` with
 * each of `fields`, each named.
 */
function badRecords(
  good: object,
  required: readonly string[],
  fields: readonly BadField[],
): Array<readonly [string, unknown]> {
  return [
    ["null", null],
    ["undefined", undefined],
    ["a number", 5],
    ["a string", "record"],
    ["an array", []],
    ...required.map((k) => [`no ${k}`, altered(good, k, undefined, true)] as const),
    ...fields.map(([k, v, label]) => [`${k}: ${label ?? show(v)}`, altered(good, k, v)] as const),
  ];
}

/** `field` set to each value of {@link notJson}. */
const notJsonFields = (field: string): BadField[] =>
  notJson().map(([label, v]) => [field, v, label] as const);

/**
 * What `call` did: `"VALIDATION"` when it rejected with it, otherwise what happened instead (a
 * resolution, another error, a synchronous throw), for a readable diff.
 */
async function verdict(call: () => Promise<unknown>): Promise<string> {
  let promise: Promise<unknown>;
  try {
    promise = call();
  } catch (e) {
    return `threw at once: ${describe(e)}`;
  }
  try {
    await promise;
    return "resolved";
  } catch (e) {
    return isStateSyncError(e, "VALIDATION") ? "VALIDATION" : describe(e);
  }
}

function describe(e: unknown): string {
  if (isStateSyncError(e)) return `StateSyncError ${e.code}: ${e.message}`;
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

/** Runs every case and expects `VALIDATION` of each (one diff names every case that was not). */
async function expectAllRefused(
  cases: ReadonlyArray<readonly [string, () => Promise<unknown>]>,
): Promise<void> {
  const verdicts: Record<string, string> = {};
  for (const [name, call] of cases) verdicts[name] = await verdict(call);
  expect(verdicts).toEqual(Object.fromEntries(cases.map(([name]) => [name, "VALIDATION"])));
}

/** Calls a port's method with an argument its type does not allow. */
type Loose = (...args: unknown[]) => Promise<unknown>;
const loose = (f: unknown): Loose => f as Loose;

/** One test's snapshot store, opened and closed by the suite. */
type WithSnapshotStore = (fn: (h: { store: SnapshotStore }) => Promise<void>) => Promise<void>;

/**
 * Registers the bad-argument cases of {@link SnapshotStore} (called inside the suite's
 * `describe`). `record(revision, state, logIdentity)` makes a valid record.
 */
export function snapshotArgumentCases(
  withStore: WithSnapshotStore,
  record: (revision: number, state: unknown, logIdentity?: string) => SnapshotRecord,
): void {
  it("refuses a key that is not a non-empty string with VALIDATION in load, save and delete, writing nothing", () =>
    withStore(async ({ store }) => {
      await store.save("k", record(1, { v: 1 }));
      const cases: Array<readonly [string, () => Promise<unknown>]> = [];
      for (const [name, key] of NOT_KEYS) {
        // Of another log: a save that went through would replace what is stored under "k".
        const newer = record(2, { v: 2 }, "log-2");
        cases.push([`load(${name})`, () => loose(store.load).call(store, key)]);
        cases.push([`save(${name})`, () => loose(store.save).call(store, key, newer)]);
        cases.push([`delete(${name})`, () => loose(store.delete).call(store, key)]);
      }
      await expectAllRefused(cases);
      expect(await store.load("k")).toEqual(record(1, { v: 1 }));
      for (const key of ["5", "true", "null", "undefined", "[object Object]"]) {
        expect(await store.load(key)).toBeUndefined();
      }
    }));

  it("refuses a record that is not a SnapshotRecord (schema, JSON state) with VALIDATION, keeping what it had", () =>
    withStore(async ({ store }) => {
      await store.save("k", record(1, { v: 1 }));
      // Of another log, so that the store would replace the stored record with any of these.
      const good = record(2, { v: 2 }, "log-2");
      const required = [
        "format",
        "revision",
        "state",
        "logIdentity",
        "model",
        "modelVersion",
        "savedAt",
      ];
      const records = badRecords(good, required, [
        ["format", 2],
        ["format", "1"],
        ["revision", -1],
        ["revision", 1.5],
        ["revision", 2 ** 53],
        ["revision", Number.NaN],
        ["revision", "2"],
        ["logIdentity", ""],
        ["logIdentity", 5],
        ["messageId", 5],
        ["model", ""],
        ["model", null],
        ["modelVersion", -1],
        ["modelVersion", "1"],
        ["switchedFrom", 0.5],
        ["origins", "o"],
        ["origins", [["o", 0, 1]]],
        ["savedAt", "now"],
        ["savedAt", Number.NaN],
        ...notJsonFields("state"),
      ]);
      await expectAllRefused(
        records.map(([name, r]) => [name, () => loose(store.save).call(store, "k", r)] as const),
      );
      expect(await store.load("k")).toEqual(record(1, { v: 1 }));
      await store.save("k", good);
      expect(await store.load("k")).toEqual(good);
      const newer = record(3, { v: 3 }, "log-2");
      await loose(store.save).call(store, "k", { ...newer, extra: BigInt(1) });
      expect(await store.load("k")).toEqual(newer);
    }));
}

/** One test's pending store, opened and closed by the suite; `reopen` as the suite's harness. */
type WithPendingStore = (
  fn: (h: { store: PendingStore; reopen(): Promise<PendingStore> }) => Promise<void>,
) => Promise<void>;

/**
 * Registers the bad-argument cases of {@link PendingStore} and its queues (called inside the
 * suite's `describe`). `record(seq, args)` makes a valid record.
 */
export function pendingArgumentCases(
  withStore: WithPendingStore,
  record: (seq: number, args?: unknown) => PendingRecord,
): void {
  it("refuses a key or owner that is not a string with VALIDATION in open, taking no lock", () =>
    withStore(async ({ store }) => {
      const cases: Array<readonly [string, () => Promise<unknown>]> = [];
      for (const [name, key] of NOT_KEYS) {
        cases.push([`open(${name}, "app")`, () => loose(store.open).call(store, key, "app")]);
        cases.push([`open("k", ${name})`, () => loose(store.open).call(store, "k", key)]);
      }
      await expectAllRefused(cases);
      const q = await store.open("k", "app");
      expect(await q.load()).toEqual({ records: [], nextSeq: 1 });
      await q.close();
    }));

  it("refuses a record that is not a PendingRecord, or seqs that are not seqs, with VALIDATION, keeping the queue as it was", () =>
    withStore(async ({ store, reopen }) => {
      const q = await store.open("k", "app");
      await q.put(record(1));
      await q.put(record(2));
      // A new seq: a put that went through would show in the records and in nextSeq.
      const good = record(3);
      const required = ["format", "seq", "kind", "name", "args", "queuedAt", "mv"];
      const records = badRecords(good, required, [
        ["format", 2],
        ["seq", 0],
        ["seq", -1],
        ["seq", 1.5],
        ["seq", 2 ** 53],
        // Above the bound of every seq (MAX_PENDING_SEQ, 2^52): no seq would be left after it.
        ["seq", 2 ** 52 + 1],
        ["seq", Number.MAX_SAFE_INTEGER],
        ["seq", Number.NaN],
        ["seq", "3"],
        ["kind", "other"],
        ["name", ""],
        ["name", 5],
        ["queuedAt", -1],
        ["queuedAt", "t"],
        ["mv", -1],
        ["mv", "1"],
        ["origin", ""],
        ["origin", "has space"],
        ["origin", 5],
        ["logIdentity", ""],
        ["logIdentity", 5],
        ...notJsonFields("args"),
      ]);
      const seqLists: Array<readonly [string, unknown]> = [
        ...NOT_KEYS,
        ["a string of digits", "12"],
        ["a Set", new Set([1])],
        ["an array-like object", { length: 1, 0: 1 }],
        ...[0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, 2 ** 52 + 1, "1", null].map(
          (seq) => [`[${show(seq)}]`, [seq]] as const,
        ),
        // A good seq beside a bad one: the list is refused as a whole, nothing removed.
        ['[1, "2"]', [1, "2"]],
      ];
      await expectAllRefused([
        ...records.map(([name, r]) => [`put(${name})`, () => loose(q.put).call(q, r)] as const),
        ...seqLists.map(
          ([name, seqs]) => [`delete(${name})`, () => loose(q.delete).call(q, seqs)] as const,
        ),
      ]);
      const kept = { records: [record(1), record(2)], nextSeq: 3 };
      expect(await q.load()).toEqual(kept);
      await q.close();
      const other = await reopen();
      const q2 = await other.open("k", "app");
      expect(await q2.load()).toEqual(kept);
      await q2.put(good);
      await loose(q2.put).call(q2, { ...record(4), extra: BigInt(1) });
      await q2.delete([1]);
      expect(await q2.load()).toEqual({ records: [record(2), good, record(4)], nextSeq: 5 });
      await q2.close();
      await other.close?.();
    }));
}
