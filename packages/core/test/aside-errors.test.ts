import { MemoryLog, type StateSyncError } from "@statesync/core";
import { describe, expect, it } from "vitest";
import { open } from "./fixtures.js";

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => "resolved",
    (e: StateSyncError) => e.code ?? (e as Error).message,
  );

/**
 * Queues `fns` behind a first update held in flight, so they share one batch.
 */
async function sharedBatch(
  log: MemoryLog,
  s: Awaited<ReturnType<typeof open>>,
  fns: Array<(d: { count: number; items: string[] }) => unknown>,
) {
  log.setAppendDelay(30);
  const first = s.update((d) => void (d.count += 1));
  await new Promise((r) => setTimeout(r, 5)); // first is being appended
  const ps = fns.map((f) => s.update(f as never));
  ps.forEach((p) => p.catch(() => undefined));
  await first;
  log.setAppendDelay(0);
  return ps;
}

describe("aside: an op whose recipe failed gets its own error when the round throws", () => {
  it("the append throws PERMISSION_DENIED: the failed recipe's caller gets its own error", async () => {
    const log = new MemoryLog();
    const s = await open(log);
    log.setAppendDelay(30);
    const first = s.update((d) => void (d.count += 1));
    await new Promise((r) => setTimeout(r, 5));
    const a = s.update(() => {
      throw new Error("own failure");
    });
    const b = s.update((d) => void d.items.push("b"));
    a.catch(() => undefined);
    b.catch(() => undefined);
    log.failNextAppends(0);
    await first;
    log.setAppendDelay(0);
    log.failNextAppends(1, "PERMISSION_DENIED"); // b's append (a's recipe failed: not in it)
    expect(await outcome(b)).toBe("PERMISSION_DENIED");
    // Before 9c6ebd8: "own failure". Its entry never held it.
    expect(await outcome(a)).toBe("own failure");
    await s.close();
  });

  it("a failed recipe beside one too large alone gets its own error, the large one PAYLOAD_TOO_LARGE", async () => {
    const log = new MemoryLog({ maxEntryBytes: 4096 });
    const s = await open(log);
    const [a, b] = await sharedBatch(log, s, [
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
