import { describe, expect, it } from "vitest";
import { MemoryLog, type StateSyncError } from "@statesync/core";
import { open } from "./fixtures.js";

// Regression test (fresh-eyes trial): `history({ from: 5, to: 2 })` answered an empty listing,
// which reads as "nothing happened there"; the CLI refused the same range.
describe("history's range", () => {
  it("refuses from after to with VALIDATION, and still lists a range of one", async () => {
    const log = new MemoryLog();
    const a = await open(log);
    for (let i = 0; i < 5; i++) await a.update("increment", { by: 1 });
    const error = (await a.history({ from: 5, to: 2 }).catch((e: unknown) => e)) as StateSyncError;
    expect([error.code, error.message]).toEqual(["VALIDATION", "from (5) is after to (2)"]);
    expect((await a.history({ from: 3, to: 3 })).map((e) => e.revision)).toEqual([3]);
    await a.close();
  });
});
