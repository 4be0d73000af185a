import { rm } from "node:fs/promises";
import { join } from "node:path";
import { StateSyncError } from "@statesync/node";
import { describe, expect, it } from "vitest";
import { OUT_DIR, type Benchmark } from "../src/lib/harness.js";
import { runBenchmark, summarize } from "../src/lib/results.js";
import { selfTimes, type CpuProfile } from "../src/lib/profiler.js";
import { editingTrace, textModel } from "../src/lib/text-trace.js";

describe("editingTrace", () => {
  it("is deterministic and every edit is valid on the document so far", () => {
    const a = editingTrace(20_000);
    expect(editingTrace(20_000)).toEqual(a);
    expect(editingTrace(20_000, 9)).not.toEqual(a);
    let size = 0;
    for (const e of a) {
      if (e.command === "insert") {
        expect(e.args.pos).toBeLessThanOrEqual(size);
        expect(textModel.commands.insert.args.safeParse(e.args).success).toBe(true);
        size += 1;
      } else {
        expect(e.args.pos).toBeLessThan(size);
        size -= 1;
      }
    }
    const inserts = a.filter((e) => e.command === "insert").length;
    // mostly typing, some deletes
    expect(inserts).toBeGreaterThan(a.length / 2);
    expect(inserts).toBeLessThan(a.length);
  });
});

describe("selfTimes", () => {
  it("sums self time per function, leaves idle out of the busy time and sorts by time", () => {
    const frame = (functionName: string, url = "") => ({
      functionName,
      url,
      lineNumber: 0,
      columnNumber: 0,
    });
    const profile: CpuProfile = {
      nodes: [
        { id: 1, callFrame: frame("(idle)") },
        { id: 2, callFrame: frame("apply", "file:///work/x/packages/core/dist/apply.js") },
        { id: 3, callFrame: frame("apply", "file:///work/x/packages/core/dist/apply.js") },
        { id: 4, callFrame: frame("decode", "file:///work/x/node_modules/nats/lib/codec.js") },
      ],
      startTime: 0,
      endTime: 10_000,
      // each sample's time is the delta that follows it
      samples: [2, 4, 3, 1, 2],
      timeDeltas: [0, 1_000, 2_000, 3_000, 4_000],
    };
    const r = selfTimes(profile);
    expect(r.idleMs).toBe(4);
    expect(r.busyMs).toBe(6);
    expect(r.top.map((t) => [t.fn, t.ms])).toEqual([
      ["apply (packages/core/dist/apply.js:1)", 4],
      ["decode (node_modules/nats/lib/codec.js:1)", 2],
    ]);
  });
});

describe("runBenchmark", () => {
  it("reports a failing benchmark, runs the next, and the summary marks the failed one", async () => {
    const failing: Benchmark = {
      name: "test-failing",
      title: "a benchmark that fails",
      needsServer: false,
      run: () =>
        Promise.reject(new StateSyncError("RETRY_LIMIT", "the update conflicted 64 times")),
    };
    const passing: Benchmark = {
      name: "test-passing",
      title: "a benchmark that passes",
      needsServer: false,
      run: async () => ({
        tables: [],
        summary: [{ figure: "a figure", value: "42" }],
        targets: [],
        data: {},
        failures: ["pinned placement: no taskset"],
      }),
    };
    const order = [failing.name, passing.name];
    const write = process.stdout.write;
    process.stdout.write = () => true; // keep the test output quiet
    try {
      const a = await runBenchmark(failing, 0.1);
      const b = await runBenchmark(passing, 0.1);
      expect(a.ok).toBe(false);
      expect(!a.ok && a.error).toContain("RETRY_LIMIT");
      expect(b.ok).toBe(true);
      const text = await summarize(OUT_DIR, order);
      expect(text).toContain(
        "**test-failing FAILED**: RETRY_LIMIT: StateSyncError: the update conflicted 64 times",
      );
      expect(text).toContain("| test-passing | a figure | 42 |");
      expect(text).toContain("**test-passing partly failed**: pinned placement: no taskset");
    } finally {
      process.stdout.write = write;
      for (const n of order) await rm(join(OUT_DIR, `${n}.json`), { force: true });
    }
  });
});
