import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  createSynchronizer,
  decodeEntry,
  defineModel,
  MAX_STATE_DEPTH,
  MemoryLog,
  MemoryPendingStore,
  nestedDeeperThan,
  pendingQueue,
  stateHash,
  StateSyncError,
} from "@statesync/core";

/**
 * Which states each kind of update can write (docs/format.md, "Limits"). A state may nest 255
 * levels; an update entry carries a patch's value, and a conditional command's arguments, three
 * levels down, so at most 253 levels each; an unconditional command's entry carries its
 * arguments one level down, at most 255. Readers refuse an entry nested deeper than 256 levels,
 * and that limit stays (older readers apply it too). A fresh-eyes trial found `d.t = nest(253)`
 * (a 255-level state) refused as "the update cannot be stored: malformed entry: nested deeper
 * than 256", naming neither the update nor the limit, and docs that promised any 255-level state.
 */

/** `{ a: { a: … {} } }`: `levels` + 1 levels deep. */
function nest(levels: number): Record<string, unknown> {
  let v: Record<string, unknown> = {};
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
}

/** The depth of a state or value: the first n with nothing deeper than n. */
function depth(v: unknown): number {
  let n = 0;
  while (nestedDeeperThan(v, n)) n++;
  return n;
}

const model = defineModel({
  name: "depth-writes",
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

async function open(log: MemoryLog, pending = false) {
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

async function refusal(p: Promise<unknown>): Promise<StateSyncError> {
  const e = await p.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(e).toBeInstanceOf(StateSyncError);
  return e as StateSyncError;
}

/** Every entry of `log` decodes with the readers' checks, and a late joiner agrees. */
async function expectReadable(log: MemoryLog, of: { revision: number; state: unknown }) {
  const { latestRevision } = await log.info();
  for await (const e of log.read(1, latestRevision)) expect(decodeEntry(e.data).ok).toBe(true);
  const late = await open(log);
  expect(late.revision).toBe(of.revision);
  expect(stateHash(late.state)).toBe(stateHash(of.state));
  await late.close();
}

describe("the depth of what an update writes", () => {
  it("a conditional update writes values of at most 253 levels, into a state of at most 255", async () => {
    const log = new MemoryLog();
    const r = await open(log);
    expect(MAX_STATE_DEPTH).toBe(255);
    // A 254-level value at a key of the state (a 255-level state): over the entry's limit.
    const before = (await log.info()).latestRevision;
    const tooDeepForEntry = await refusal(
      r.update((d) => {
        d.t = nest(253);
      }),
    );
    expect(tooDeepForEntry.code).toBe("VALIDATION");
    expect(tooDeepForEntry.message).toContain(
      "the update writes a value nested 254 levels deep at $.t; an update entry carries values of at most 253 levels",
    );
    expect(tooDeepForEntry.message).not.toContain("malformed entry");
    expect(tooDeepForEntry.details).toMatchObject({ depth: 254, maxValueDepth: 253 });
    // The same state, the value written one level further down: a 253-level value.
    await r.update((d) => {
      d.t = { a: null };
    });
    await r.update((d) => {
      (d.t as { a: unknown }).a = nest(252);
    });
    expect(depth(r.state)).toBe(255);
    // Also a 253-level value two steps down: 255 levels.
    await r.update((d) => {
      d.arr.push(nest(252));
    });
    // One level more is over the state's limit, wherever it is written.
    const tooDeepForState = await refusal(
      r.update((d) => {
        d.arr.push(nest(253));
      }),
    );
    expect(tooDeepForState.code).toBe("VALIDATION");
    expect(tooDeepForState.message).toContain(
      "the update writes a value nested 254 levels deep at $.arr[1]: it would nest the state's arrays and objects 256 levels deep, deeper than 255 levels",
    );
    expect((await log.info()).latestRevision).toBe(before + 3);
    await expectReadable(log, r);
    expect((await r.compact()).revision).toBe(r.revision); // a 255-level state compacts
    await r.close();
  });

  it("a conditional command's arguments nest at most 253 levels, an unconditional one's 255", async () => {
    for (const pending of [false, true]) {
      const log = new MemoryLog();
      const r = await open(log, pending);
      const before = (await log.info()).latestRevision;
      // { v: nest(251) } nests 253 levels; the command writes a 252-level value at $.t.
      await r.update("set", { v: nest(251) });
      expect(depth(r.state)).toBe(253);
      const conditional = await refusal(r.update("set", { v: nest(252) }));
      expect(conditional.code).toBe("VALIDATION");
      expect(conditional.message).toContain('the arguments of command "set" nest 254 levels deep');
      expect(conditional.message).toContain(
        "the entry of a conditional update carries arguments of at most 253 levels",
      );
      expect(conditional.details).toMatchObject({ command: "set", depth: 254, maxDepth: 253 });
      // An unconditional command carries 255 levels: here a 255-level state.
      await r.updateUnconditionally("set", { v: nest(253) });
      expect(depth(r.state)).toBe(255);
      const unconditional = await refusal(r.updateUnconditionally("set", { v: nest(254) }));
      expect(unconditional.code).toBe("VALIDATION");
      expect(unconditional.message).toContain(
        "an unconditional command's entry carries arguments of at most 255 levels",
      );
      expect(r.pendingCount).toBe(0);
      expect((await log.info()).latestRevision).toBe(before + 2);
      await expectReadable(log, r);
      await r.close();
    }
  });
});
