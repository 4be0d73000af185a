import { describe, expect, it } from "vitest";
import type { ReplicaReport } from "../src/ipc.js";
import { EXPECTATIONS } from "../src/script.js";
import { summarize } from "../src/summary.js";

const hash = (digit: string) => digit.repeat(64);
const expected = Object.fromEntries(
  EXPECTATIONS.map((e) => [`${e.flag} for ${e.user}`, e.expected]),
);
const replica = (name: string, flagsHash = hash("a")): ReplicaReport => ({
  replica: name,
  flags: { revision: 10, hash: flagsHash },
  membership: { revision: 30, hash: hash("b") },
  observed: expected,
});

describe("summarize", () => {
  it("passes when every replica has the same revision and hash and the expected values", () => {
    const summary = summarize([replica("one"), replica("two")]);
    expect(summary.ok).toBe(true);
    expect(summary.lines).toContain(
      `feature-flags: 2 replicas identical: rev 10, hash ${hash("a")}`,
    );
  });

  it("fails on a replica with another hash", () => {
    const summary = summarize([replica("one"), replica("two", hash("c"))]);
    expect(summary.ok).toBe(false);
    expect(summary.lines.join("\n")).toMatch(/feature-flags: MISMATCH .*two rev 10 cccccccc/);
  });

  it("fails on a replica serving an unexpected value", () => {
    const wrong = { ...replica("two"), observed: { ...expected, "new-checkout for anna": false } };
    const summary = summarize([replica("one"), wrong]);
    expect(summary.ok).toBe(false);
    expect(summary.lines.join("\n")).toContain("two: new-checkout for anna = false, expected true");
  });
});
