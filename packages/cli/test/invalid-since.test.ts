import { describe, expect, it } from "vitest";
import { invalidSince } from "../src/invalid-since.js";

/** States 1..n, valid where `ok[r - 1]`; counts the replays asked for. */
function log(ok: boolean[]) {
  const asked: number[] = [];
  return {
    asked,
    stateAt: async (r: number) => (asked.push(r), ok[r - 1]),
    valid: (s: unknown) => s === true,
  };
}

describe("invalidSince (verify: which entry made the state fail the schema)", () => {
  it("finds the entry after which the state failed, in a few replays", async () => {
    const ok = Array.from({ length: 1000 }, (_, i) => i + 1 < 377);
    const l = log(ok);
    expect(await invalidSince(l.stateAt, l.valid, 1, 1000)).toBe(377);
    expect(l.asked.length).toBeLessThan(25);
  });

  it("the last one when the state failed before and was repaired", async () => {
    const ok = [true, false, false, true, true, false, false];
    const l = log(ok);
    expect(await invalidSince(l.stateAt, l.valid, 1, 7)).toBe(6);
  });

  it("the first retained revision when the starting point fails already", async () => {
    const l = log([false, false, false]);
    expect(await invalidSince(l.stateAt, l.valid, 1, 3)).toBe(1);
    const at = log([true, true, false, false]);
    expect(await invalidSince(at.stateAt, at.valid, 3, 4)).toBe(3); // retained from 3
  });

  it("claims nothing when a replay fails", async () => {
    const failing = async () => {
      throw new Error("the log changed");
    };
    expect(await invalidSince(failing, () => true, 1, 10)).toBeUndefined();
  });
});
