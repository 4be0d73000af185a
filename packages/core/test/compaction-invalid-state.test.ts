import { describe, expect, it } from "vitest";
import { MemoryLog, stateHash } from "@statesync/core";
import { codeOf, open } from "./fixtures.js";

/**
 * Regression test (found by the fault tests' hostile input): an `update` entry from another
 * writer whose patches leave a state that fails the schema (here: `count` removed) is applied
 * alike by every replica. Compaction then wrote that state as a snapshot entry and truncated the
 * history before it; a replica joining later refused the snapshot entry (CORRUPT_ENTRY) and,
 * the history being gone, could never open. Now compaction refuses (VALIDATION) and keeps the
 * history, so late joiners replay it to the same state as everyone.
 */
const removeCount = `{"v":1,"kind":"update","ts":1,"client":"evil","base":1,"seed":1,"patches":[{"op":"remove","path":["count"]}]}`;

describe("compaction of a state that fails the schema", () => {
  it("is refused, the history is kept, and a late joiner converges", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    log.injectRaw(removeCount);
    await a.fetchUpdates();
    expect("count" in (a.state as object)).toBe(false);
    expect(await codeOf(a.compact())).toBe("VALIDATION");
    expect(log.size).toBe(2);
    const late = await open(log);
    expect(late.revision).toBe(a.revision);
    expect(stateHash(late.state)).toBe(stateHash(a.state));
    await Promise.all([a.close(), late.close()]);
  });
});
