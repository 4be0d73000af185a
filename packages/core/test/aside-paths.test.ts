import { MemoryLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { behindFirst, outcome } from "./aside-fixtures.js";
import { open } from "./fixtures.js";
import { injectCommand } from "./pending/fixtures.js";

describe("aside paths", () => {
  it("split: the failed one goes first alone, the rest commit in order", async () => {
    const log = new MemoryLog({ maxEntryBytes: 8000 });
    const s = await open(log);
    const [a, b, c] = await behindFirst(log, s, [
      () => {
        throw new Error("own");
      },
      (d) => void d.items.push("b".repeat(5000)),
      (d) => void d.items.push("c".repeat(5000)),
    ]);
    expect(await outcome(a!)).toBe("own");
    expect(await outcome(b!)).toBe("resolved");
    expect(await outcome(c!)).toBe("resolved");
    expect(s.state.items.map((i) => i[0])).toEqual(["b", "c"]);
    await s.close();
  });

  it("conflict: the failed one runs again at the tail and commits; results go to the right op", async () => {
    const log = new MemoryLog();
    const s = await open(log);
    let runsA = 0;
    log.setAppendDelay(30);
    const first = s.update((d) => void (d.count += 1));
    await new Promise((r) => setTimeout(r, 5));
    const a = s.update((d) => {
      runsA++;
      if (!d.items.some((i) => i.startsWith("other"))) throw new Error("own");
      d.items.push("a");
      return "ra";
    });
    const b = s.update((d) => {
      d.items.push("b");
      return "rb";
    });
    // another writer's entry lands right after first: a's batch runs behind it and conflicts
    const append = log.appendConditional.bind(log);
    let n = 0;
    log.appendConditional = async (...args: Parameters<typeof append>) => {
      if (n++ === 0) injectCommand(log, "push", { item: "other" });
      return append(...args);
    };
    await first;
    log.setAppendDelay(0);
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.result).toBe("ra");
    expect(rb.result).toBe("rb");
    expect(ra.revision).toBe(rb.revision);
    expect(s.state.items.map((x) => x.split("@")[0])).toEqual(["other", "a", "b"]);
    expect(runsA).toBeGreaterThanOrEqual(2);
    await s.close();
  });

  it("close() during the append while one is aside: every caller settles", async () => {
    const log = new MemoryLog();
    const s = await open(log);
    const [a, b] = await behindFirst(
      log,
      s,
      [
        () => {
          throw new Error("own");
        },
        (d) => void d.items.push("b"),
      ],
      [],
      () => log.setAppendDelay(200),
    );
    await new Promise((r) => setTimeout(r, 10));
    await s.close();
    const oa = await outcome(a!);
    const ob = await outcome(b!);
    expect(oa).not.toBe("hangs");
    expect(ob).not.toBe("hangs");
    expect(oa).toBe("own");
  });

  it("maxAttempts: the failed one is not counted, gets its own error when the others run out", async () => {
    const log = new MemoryLog();
    const s = await open(log);
    const [a, b] = await behindFirst(
      log,
      s,
      [
        () => {
          throw new Error("own");
        },
        (d) => void d.items.push("b"),
      ],
      [{ maxAttempts: 1 }, { maxAttempts: 1 }],
    );
    expect(await outcome(a!)).toBe("own");
    expect(await outcome(b!)).toBe("resolved");
    await s.close();
  });
});
