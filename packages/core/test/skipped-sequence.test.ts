import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel, EntryVerdicts } from "@statesync/core";
import { at, genesisOf, updateOfN } from "./support/replay-entries.js";

/**
 * A revision the log assigned and holds no entry at (`LogEntry.skipped`: nats-server 2.9 used up
 * a stream sequence for a publish its resource limits refused). Found by a trial: one refused
 * append stalled the writer `TRUNCATED` for good, and every replica opened later too. Every
 * replay steps over such a revision alike (a `SKIPPED_SEQUENCE` event), so a conditional update
 * based on it applies; never across a gap before it.
 */
const model = defineModel({
  name: "skipped",
  state: z.object({ n: z.number().int() }),
  initial: { n: 0 },
  commands: {
    add: {
      args: z.object({ by: z.number().int() }),
      apply(d, { by }) {
        d.n += by;
      },
    },
  },
});

const genesis = genesisOf(model);
const update = updateOfN;
const hole = (revision: number) => ({ revision, data: new Uint8Array(0), skipped: true as const });

describe("a revision the log holds no entry at (LogEntry.skipped)", () => {
  it("is stepped over: the update based on it applies", () => {
    const verdicts = new EntryVerdicts(model, true);
    const got = [at(1, genesis), at(2, update(1, 5)), hole(3), hole(4), at(5, update(4, 7))].map(
      (e) => verdicts.next(e),
    );
    expect(got.map((v) => v.kind)).toEqual(["applied", "applied", "skipped", "skipped", "applied"]);
    const skipped = got[2] as unknown as { error: { code: string; details: { revision: number } } };
    expect(skipped.error.code).toBe("SKIPPED_SEQUENCE");
    expect(skipped.error.details.revision).toBe(3);
  });

  it("is never a way across a gap before it", () => {
    const verdicts = new EntryVerdicts(model, true);
    const got = [at(1, genesis), at(2, update(1, 5)), hole(4)].map((e) => verdicts.next(e));
    expect(got.map((v) => v.kind)).toEqual(["applied", "applied", "stops"]);
    expect((got[2] as unknown as { error: { code: string } }).error.code).toBe("TRUNCATED");
  });
});
