import { describe, expect, it } from "vitest";
import type { StateSyncError } from "../src/errors.js";
import { rebuildStateAt } from "../src/history.js";
import { MemoryLog } from "../src/memory-log.js";
import { chunkedTexts, genesisText, incText, snapshotText, tinyModel } from "./engine-fixtures.js";

/** Part entries 0..3 of a chunked snapshot of tinyModel holding `n` at `base`, and its entry. */
function chunked(id: string, base: number, n: number): { parts: string[]; snapshot: string } {
  const texts = chunkedTexts(id, base, n);
  return { parts: texts.slice(0, -1), snapshot: texts.at(-1)! };
}

const stateAt = (log: MemoryLog, revision: number) =>
  rebuildStateAt(log, tinyModel, revision).catch((e: StateSyncError) => e.code);

// Regression test (fresh-eyes trial of the CLI's `state --at`): a log compacted with a chunked
// snapshot starts with its parts, and the state at a revision among them was refused as "before
// the retained history", although `history` lists those revisions and every replica that loads
// the snapshot stands on them (the state at its base, with the entries between its parts).
describe("rebuildStateAt among the parts a log starts with", () => {
  it("answers the state at base with the entries up to the revision applied", async () => {
    const log = new MemoryLog();
    const k = chunked("k", 3, 2);
    for (const text of [genesisText, incText, incText]) log.injectRaw(text); // 1..3: n = 2
    log.injectRaw(k.parts[0]!); // 4
    log.injectRaw(k.parts[1]!); // 5
    log.injectRaw(incText); // 6: another writer's entry between the parts
    log.injectRaw(k.parts[2]!); // 7
    log.injectRaw(k.parts[3]!); // 8
    log.injectRaw(k.snapshot); // 9
    log.injectRaw(incText); // 10
    await log.truncateBefore(4);
    const states = [];
    for (let r = 3; r <= 10; r++) states.push(await stateAt(log, r));
    expect(states).toEqual([
      "TRUNCATED",
      { n: 2 },
      { n: 2 },
      { n: 3 },
      { n: 3 },
      { n: 3 },
      { n: 3 },
      { n: 4 },
    ]);
  });

  it("is TRUNCATED, saying so, among parts that no snapshot entry completes", async () => {
    const log = new MemoryLog();
    const x = chunked("x", 1, 7);
    log.injectRaw(genesisText); // 1
    for (const part of x.parts.slice(0, 3)) log.injectRaw(part); // 2..4, part 3 never written
    log.injectRaw(snapshotText(4, 5)); // 5: a later one-message snapshot
    await log.truncateBefore(2);
    const error = (await rebuildStateAt(log, tinyModel, 3).catch(
      (e: unknown) => e,
    )) as StateSyncError;
    expect(error.code).toBe("TRUNCATED");
    expect(error.message).toMatch(/revision 3 lies among the parts of a chunked snapshot/);
    expect(await stateAt(log, 5)).toEqual({ n: 5 });
  });
});
