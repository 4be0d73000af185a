import { MemoryLog } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { behindFirst, outcome } from "./aside-fixtures.js";
import { open } from "./fixtures.js";

describe("aside: an op whose recipe failed gets its own error when the round throws", () => {
  it("the append throws PERMISSION_DENIED: the failed recipe's caller gets its own error", async () => {
    const log = new MemoryLog();
    const s = await open(log);
    const [a, b] = await behindFirst(
      log,
      s,
      [
        () => {
          throw new Error("own failure");
        },
        (d) => void d.items.push("b"),
      ],
      [],
      () => {
        log.setAppendDelay(0);
        log.failNextAppends(1, "PERMISSION_DENIED"); // b's append (a's recipe failed: not in it)
      },
    );
    expect(await outcome(b!)).toBe("PERMISSION_DENIED");
    // With 9c6ebd8 alone a got b's PERMISSION_DENIED, though its entry never held it.
    expect(await outcome(a!)).toBe("own failure");
    await s.close();
  });

  it("a failed recipe beside one too large alone gets its own error, the large one PAYLOAD_TOO_LARGE", async () => {
    const log = new MemoryLog({ maxEntryBytes: 4096 });
    const s = await open(log);
    const [a, b] = await behindFirst(log, s, [
      () => {
        throw new Error("own failure");
      },
      (d) => void d.items.push("x".repeat(10_000)),
    ]);
    expect(await outcome(b!)).toBe("PAYLOAD_TOO_LARGE");
    expect(await outcome(a!)).toBe("own failure");
    await s.close();
  });
});
