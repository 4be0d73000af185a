import fc from "fast-check";
import { createSynchronizer, decodeEntry, MemoryLog, type StateSyncError } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { ChainCheck } from "../src/chain.js";
import { counter } from "./helpers.js";

const head = { v: 1, ts: 1, client: "c" };
const genesis = JSON.stringify({
  ...head,
  kind: "genesis",
  model: "counter",
  version: 1,
  initialHash: counter.initialHash,
});
const update = (base: number) =>
  JSON.stringify({
    ...head,
    kind: "update",
    base,
    seed: 1,
    patches: [{ op: "replace", path: ["count"], value: base }],
  });
const command = JSON.stringify({
  ...head,
  kind: "command",
  seed: 1,
  name: "increment",
  args: { by: 1 },
});

/** One entry after the genesis, given the revision it will be stored at. */
const entryArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant((revision: number) => update(revision - 1)) },
  {
    weight: 2,
    arbitrary: fc.integer({ min: 0, max: 6 }).map((d) => (r: number) => update(Math.max(0, r - d))),
  },
  { weight: 2, arbitrary: fc.constant(() => command) },
  { weight: 1, arbitrary: fc.constant(() => "{not json") },
  { weight: 1, arbitrary: fc.constant(() => genesis) },
  { weight: 1, arbitrary: fc.constant(() => JSON.stringify({ ...head, kind: "intent" })) },
  { weight: 1, arbitrary: fc.constant(() => JSON.stringify({ ...head, v: 99, kind: "update" })) },
);

/**
 * What `info` says of a log of one state (chain.ts) agrees with what the engine does with it:
 * the same entries skipped as malformed, the same stop. The engine is a replica as `verify` opens
 * it (packages/cli/src/replica.ts), over a memory log.
 */
describe("info's chain check", () => {
  it("counts the entries a replica skips and finds where it stops", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(entryArb, { maxLength: 12 }), async (makers) => {
        const log = new MemoryLog();
        log.injectRaw(genesis);
        for (const make of makers) log.injectRaw(make(log.size + 1));
        const chain = new ChainCheck(true);
        for await (const e of log.read(1, log.size)) chain.step(e.revision, decodeEntry(e.data));

        const skipped: number[] = [];
        let stop: number | undefined;
        try {
          const replica = await createSynchronizer({
            log,
            model: counter,
            snapshots: false,
            compaction: false,
            live: false,
            waitFor: "synced",
            upgrade: "manual",
            onError: (e: StateSyncError) => {
              if (e.code === "CORRUPT_ENTRY") skipped.push(e.details.revision as number);
            },
          });
          await replica.close();
        } catch (e) {
          stop = (e as StateSyncError).details.revision as number;
        }
        expect(chain.malformed).toBe(skipped.length);
        expect(chain.firstMalformed?.revision).toBe(skipped[0]);
        expect(chain.stop?.revision).toBe(stop);
      }),
      { numRuns: 150 },
    );
  });
});

describe("info's chain check, shared stream", () => {
  // A key purged by an operator starts again from a new genesis entry, and every replica goes on
  // from it (core's replay.ts); before, `info` counted it as malformed, as replicas skipped it.
  it("goes on from a genesis entry after the key's entries (the key started again)", () => {
    const chain = new ChainCheck(false);
    const feed = (revision: number, data: string) =>
      chain.step(revision, decodeEntry(new TextEncoder().encode(data)));
    feed(1, genesis);
    feed(2, update(1));
    feed(7, genesis);
    feed(9, update(7));
    expect(chain.malformed).toBe(0);
    expect(chain.stop).toBeNull();
  });
});
