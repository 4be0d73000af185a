import { StateSyncError } from "./errors.js";
import type { AppendOptions } from "./log.js";
import { whenAborted } from "./abort-watch.js";

/** Waits for `p`, or rejects `UNAVAILABLE` (outcome unknown) when a limit of `options` ends first. */
export function raceLimits<T>(p: Promise<T>, options: AppendOptions): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const { signal, timeoutMs } = options;
    const end = (why: string, details: Record<string, unknown>) => {
      cleanup();
      reject(
        new StateSyncError("UNAVAILABLE", `no answer from the memory log ${why}`, { details }),
      );
    };
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(() => end(`within ${timeoutMs} ms`, {}), timeoutMs);
    const onAbort = () => end("before the signal aborted", { aborted: true });
    const cleanup = () => {
      if (timer !== undefined) clearTimeout(timer);
      stop?.();
    };
    if (signal?.aborted) return end("before the signal aborted", { aborted: true, notSent: true });
    const stop = signal && whenAborted(signal, onAbort);
    p.then(
      (v) => (cleanup(), resolve(v)),
      (e: unknown) => (cleanup(), reject(e)),
    );
  });
}
