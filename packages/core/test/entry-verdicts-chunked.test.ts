import { describe, expect, it } from "vitest";
import { EntryVerdicts } from "@statesync/core";
import type { LogEntry } from "../src/log.js";
import { bytes, chunkedTexts, incText, tinyModel } from "./engine-fixtures.js";

const at = (revision: number, text: string): LogEntry => ({ revision, data: bytes(text) });
const staleUpdate = JSON.stringify({
  v: 1,
  kind: "update",
  ts: 1,
  client: "w",
  base: 1,
  seed: 1,
  patches: [{ op: "replace", path: ["n"], value: 99 }],
});

/**
 * Entries a replay holds while it reads a chunked snapshot's parts get their verdict only when the
 * snapshot entry loads and replays them: `EntryVerdicts` hands those verdicts over with the
 * snapshot entry's (`replayed`). Before, they were only `held`, and `history --model` listed a
 * stale update held there as if it applied.
 */
describe("EntryVerdicts on a chunked snapshot", () => {
  it("gives the verdicts of the entries held since part 0 with the snapshot entry's", () => {
    const verdicts = new EntryVerdicts(tinyModel, true);
    const k = chunkedTexts("k", 4, 10, 2); // parts at 5, 6 and 8, the snapshot entry at 9
    const got = [
      at(5, k[0]!),
      at(6, k[1]!),
      at(7, staleUpdate), // based on 1: stale once the state at 4 is loaded
      at(8, k[2]!),
      at(9, k[3]!),
      at(10, incText),
    ].map((e) => verdicts.next(e));
    expect(got.slice(0, 4).map((v) => v.kind)).toEqual(["held", "held", "held", "held"]);
    expect(got[4]).toMatchObject({ kind: "applied" });
    const replayed = got[4]!.kind === "applied" ? got[4]!.replayed : undefined;
    expect(replayed?.find((r) => r.revision === 7)?.verdict).toMatchObject({
      kind: "skipped",
      error: { code: "CORRUPT_ENTRY" },
    });
    expect(replayed?.find((r) => r.revision === 8)?.verdict.kind).toBe("applied");
    expect(got[5]).toEqual({ kind: "applied" });
  });
});
