import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  canonicalJson,
  createSynchronizer,
  defineModel,
  encodeEntry,
  findJsonProblem,
  findNonJson,
  isStateSyncError,
  MemoryLog,
  MemoryPendingStore,
  MemorySnapshotStore,
  nestedDeeperThan,
  pendingQueue,
  stateHash,
  StateSyncError,
} from "@statesync/core";

/**
 * A fresh-eyes trial: command arguments nested 20,000 or 100,000 levels deep made `update` and
 * `updateUnconditionally` throw a raw `RangeError` (a recursive walk of the recipe recorder, the
 * `JSON.stringify` of the entry), and with a pending queue `QUEUE_FAILED` (the store's
 * `JSON.stringify`), though the problem is the input. Every user value that enters the SDK is now
 * walked iteratively before anything recursive touches it: too deep for where it goes is
 * `VALIDATION` naming the depth, and nothing is appended or stored.
 */
const DEEP = 100_000;

/** `{ a: { a: … {} } }`, `levels` + 1 levels deep, built without recursion. */
function nest(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = {};
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

const model = defineModel({
  name: "deep-input",
  state: z.object({ t: z.unknown(), arr: z.array(z.unknown()), n: z.number() }),
  initial: { t: null, arr: [], n: 0 },
  commands: {
    set: {
      args: z.object({ v: z.unknown() }),
      apply(d, { v }) {
        d.t = v;
      },
    },
  },
});

type Deep = Awaited<ReturnType<typeof openDeep>>;

async function openDeep(log: MemoryLog, pending = false) {
  return createSynchronizer({
    log,
    model,
    compaction: false,
    snapshots: false,
    ...(pending
      ? { pending: pendingQueue({ store: new MemoryPendingStore(), owner: "device-1" }) }
      : {}),
  });
}

/** What calling `fn` ended with: its value, or what it threw or rejected with. */
async function outcome(fn: () => unknown): Promise<{ value?: unknown; error?: unknown }> {
  try {
    return { value: await fn() };
  } catch (error) {
    return { error };
  }
}

/**
 * How a refusal reads: "VALIDATION, depth named" when it is a typed `VALIDATION` that says how
 * deep the value nests (`{ v: nest(DEEP) }` nests DEEP + 2 levels, `nest(DEEP)` DEEP + 1), else
 * what it was (a raw `RangeError`, another code). A queued recipe runs when it is pushed: its
 * refusal is `UPDATE_REFUSED` with that `VALIDATION` as its cause (docs/offline.md).
 */
function verdict(got: { error?: unknown }): string {
  if (!(got.error instanceof StateSyncError)) return `not a StateSyncError: ${String(got.error)}`;
  const error = isStateSyncError(got.error, "UPDATE_REFUSED") ? got.error.cause : got.error;
  if (!isStateSyncError(error, "VALIDATION")) return `${got.error.code}: ${got.error.message}`;
  const named = new RegExp(`\\b(${DEEP + 1}|${DEEP + 2})\\b`).test(error.message);
  return named ? TOO_DEEP : `VALIDATION without the depth: ${error.message.slice(0, 120)}`;
}
const TOO_DEEP = "VALIDATION, depth named";

describe("user values nested 100,000 levels deep", () => {
  it("every way of writing one is VALIDATION naming its depth, and nothing is appended", async () => {
    const logs = [new MemoryLog(), new MemoryLog()];
    const r = await openDeep(logs[0]!);
    const queued = await openDeep(logs[1]!, true);
    const deepRecipe = (d: { t: unknown }) => {
      d.t = nest(DEEP);
    };
    const writes: Array<[string, (s: Deep) => Promise<unknown>]> = [
      ["update(name, args)", (s) => s.update("set", { v: nest(DEEP) })],
      ["updateUnconditionally", (s) => s.updateUnconditionally("set", { v: nest(DEEP) })],
      ["a plain recipe", (s) => s.update(deepRecipe)],
      ["a recipe run with a recorder", (s) => s.update(deepRecipe)], // after a large update
    ];
    const verdicts: Record<string, string> = {};
    for (const [i, s] of [r, queued].entries()) {
      const log = logs[i]!;
      const before = (await log.info()).latestRevision;
      for (const [name, write] of writes) {
        if (name === "a recipe run with a recorder") {
          // A state large enough to be frozen along the writes: the next updates are recorded.
          await s.update((d) => {
            d.arr = Array.from({ length: 2_000 }, (_, i) => i);
          });
        }
        verdicts[`${name}${s === queued ? " (queued)" : ""}`] = verdict(
          await outcome(() => write(s)),
        );
      }
      expect((await log.info()).latestRevision).toBe(before + 1); // the large update only
      expect(s.pendingCount).toBe(0);
      // Updates go on.
      await s.update((d) => {
        d.n += 1;
      });
      expect(s.state.n).toBe(1);
    }
    expect(verdicts).toEqual(Object.fromEntries(Object.keys(verdicts).map((k) => [k, TOO_DEEP])));
    expect(Object.keys(verdicts)).toHaveLength(8);
    await Promise.all([r.close(), queued.close()]);
  });

  it("in a batch of queued updates, only the deep one fails", async () => {
    const r = await openDeep(new MemoryLog());
    const inc = (d: { n: number }) => {
      d.n += 1;
    };
    const results = await Promise.allSettled([
      r.update(inc),
      r.update(inc),
      r.update((d) => {
        d.t = nest(DEEP);
      }),
      r.update(inc),
      r.update("set", { v: nest(DEEP) }),
      r.update(inc),
    ]);
    expect(results.map((x) => x.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "rejected",
      "fulfilled",
    ]);
    for (const i of [2, 4]) {
      expect(verdict({ error: (results[i] as PromiseRejectedResult).reason })).toBe(TOO_DEEP);
    }
    expect(r.state.n).toBe(4);
    await r.close();
  });

  it("the public functions that take a value either handle it or refuse it with VALIDATION", async () => {
    const deep = nest(DEEP);
    // Hashing and canonical text work at any depth (an unconditional command can nest a state
    // deeper than 255 levels, and replicas compare such states too).
    const text = `${'{"a":'.repeat(DEEP)}{}${"}".repeat(DEEP)}`;
    expect(canonicalJson(deep)).toBe(text);
    expect(stateHash(deep)).toMatch(/^[0-9a-f]{64}$/);
    expect(stateHash(deep)).toBe(stateHash(JSON.parse(text)));
    // Past 256 levels the text is written iteratively: the same text as a recursive writer's.
    let mixed: unknown = { z: [1, "s", null], a: true };
    for (let i = 0; i < 600; i++) mixed = i % 2 ? { b: mixed, a: [i, {}] } : [i, mixed, []];
    const sorted = (v: unknown): string =>
      v === null || typeof v !== "object"
        ? JSON.stringify(v)
        : Array.isArray(v)
          ? `[${v.map(sorted).join(",")}]`
          : `{${Object.keys(v)
              .sort()
              .map((k) => `${JSON.stringify(k)}:${sorted((v as Record<string, unknown>)[k])}`)
              .join(",")}}`;
    expect(canonicalJson(mixed)).toBe(sorted(mixed));
    expect(findNonJson(deep)).toBeUndefined();
    expect(findJsonProblem(deep, 255)).toMatchObject({ tooDeep: true });
    expect(nestedDeeperThan(deep, 255)).toBe(true);

    const refusing: Array<[string, () => unknown]> = [
      [
        "defineModel (initial state)",
        () =>
          defineModel({
            name: "m",
            state: z.object({ t: z.unknown() }),
            initial: { t: deep },
            commands: {},
          }),
      ],
      [
        "encodeEntry (a command's args)",
        () =>
          encodeEntry({
            v: 3,
            kind: "command",
            ts: 1,
            seed: 1,
            client: "c",
            name: "set",
            args: { v: deep },
          }),
      ],
      [
        "encodeEntry (a patch's value)",
        () =>
          encodeEntry({
            v: 1,
            kind: "update",
            ts: 1,
            seed: 1,
            client: "c",
            base: 1,
            patches: [{ op: "replace", path: ["t"], value: deep }],
          }),
      ],
      [
        "MemorySnapshotStore.save",
        () =>
          new MemorySnapshotStore().save("k", {
            format: 1,
            revision: 1,
            state: { t: deep },
            logIdentity: "log",
            model: "m",
            modelVersion: 1,
            savedAt: 1,
          }),
      ],
      [
        "a PendingQueue's put",
        async () => {
          const q = await new MemoryPendingStore().open("k", "device-1");
          await q.put({
            format: 1,
            seq: 1,
            kind: "command",
            name: "set",
            args: { v: deep },
            queuedAt: 1,
            mv: 1,
          });
        },
      ],
    ];
    const verdicts: Record<string, string> = {};
    for (const [name, call] of refusing) {
      const { error } = await outcome(call);
      verdicts[name] = isStateSyncError(error, "VALIDATION") ? "VALIDATION" : String(error);
    }
    expect(verdicts).toEqual(Object.fromEntries(refusing.map(([name]) => [name, "VALIDATION"])));
  });
});
