import type { MemoryLog, StateSyncError } from "@statesync/core";
import type { open } from "./fixtures.js";

/**
 * The tests of updates a round sets aside (`Batch.setAside`, engine `write-batch.ts`): how an
 * update ended, "resolved" or its error's code (message when it has none), or "hangs" when it
 * did not settle within `ms`.
 */
export const outcome = (p: Promise<unknown>, ms = 20_000) =>
  Promise.race([
    p.then(
      () => "resolved",
      (e: StateSyncError) => e.code ?? (e as Error).message,
    ),
    new Promise((r) => setTimeout(() => r("hangs"), ms)),
  ]);

type S = { count: number; items: string[] };

/**
 * Queues `fns` (with `opts[i]`) behind a first update held in flight, so they share one batch;
 * `after` runs once the first committed (default: appends no longer delayed).
 */
export async function behindFirst(
  log: MemoryLog,
  s: Awaited<ReturnType<typeof open>>,
  fns: Array<(d: S) => unknown>,
  opts: object[] = [],
  after: () => void = () => log.setAppendDelay(0),
) {
  log.setAppendDelay(30);
  const first = s.update((d) => void (d.count += 1));
  await new Promise((r) => setTimeout(r, 5)); // the first is being appended
  const ps = fns.map((f, i) => s.update(f as never, opts[i] as never));
  ps.forEach((p) => p.catch(() => undefined));
  await first;
  after();
  return ps;
}
