import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineModel, EntryVerdicts } from "@statesync/core";
import { at, genesisOf, updateOfN } from "./support/replay-entries.js";

/**
 * A fresh-eyes trial: one raw conditional entry on a shared-stream key whose base was an older
 * revision of the key stopped every replica of it `TRUNCATED` for good (and every one opened
 * later, and `statesync compact`). No honest append has such a base: the server checks the
 * subject's last sequence. In a shared stream only a base past the replica's revision means
 * missed entries; an earlier one is skipped (`CORRUPT_ENTRY`), as in an own stream.
 */
const model = defineModel({
  name: "shared-stale",
  state: z.object({ n: z.number().int() }),
  initial: { n: 0 },
  commands: {},
});
const genesis = genesisOf(model);
const update = updateOfN;

describe("a conditional entry on a shared stream's key based on an older revision", () => {
  it("is skipped as CORRUPT_ENTRY, and the key goes on", () => {
    const verdicts = new EntryVerdicts(model, false);
    const got = [at(2, genesis), at(5, update(2, 1)), at(9, update(2, 99)), at(12, update(5, 2))];
    const kinds = got.map((e) => verdicts.next(e));
    // The skipped entry moves the revision (9): the server made honest writers base on it.
    expect(kinds.map((v) => v.kind)).toEqual(["applied", "applied", "skipped", "skipped"]);
    expect((kinds[2] as unknown as { error: { code: string } }).error.code).toBe("CORRUPT_ENTRY");
  });

  it("based on the skipped entry's revision, the next update applies; past it, the replay stops", () => {
    const verdicts = new EntryVerdicts(model, false);
    const entries = [
      at(2, genesis),
      at(5, update(2, 1)),
      at(9, update(2, 99)),
      at(12, update(9, 2)),
    ];
    expect(entries.map((e) => verdicts.next(e).kind)).toEqual([
      "applied",
      "applied",
      "skipped",
      "applied",
    ]);
    const ahead = new EntryVerdicts(model, false);
    const missed = [at(2, genesis), at(7, update(4, 1))];
    const last = missed.map((e) => ahead.next(e)).at(-1) as unknown as { error: { code: string } };
    expect(last.error.code).toBe("TRUNCATED");
    // It names the entry's base and both causes (a trial: "no longer holds the entries after" alone).
    expect((last.error as unknown as Error).message).toMatch(
      /^the conditional entry at revision 7 is based on revision 4, past this key's last entry the replica read \(2\): .* \(purged or deleted\), or the entry was not written by a conditional append/,
    );
  });
});
