import { StateSyncError } from "./errors.js";
import { whenAborted } from "./abort-watch.js";

/**
 * "Full jitter" exponential backoff (AWS Architecture Blog, "Exponential Backoff And Jitter"):
 * a uniform delay in [0, min(capMs, baseMs * 2^attempt)).
 */
export function backoffDelay(attempt: number, baseMs = 2, capMs = 250): number {
  return Math.random() * Math.min(capMs, baseMs * 2 ** Math.min(attempt, 20));
}

/** Resolves after `ms`, or rejects with `ABORTED` as soon as `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    const timer = setTimeout(() => {
      stop?.();
      resolve();
    }, ms);
    const stop = signal && whenAborted(signal, onAbort);
  });
}

/** The `ABORTED` error for an aborted signal, keeping its reason as the cause. */
export function abortError(signal: AbortSignal): StateSyncError {
  return new StateSyncError("ABORTED", "the operation was aborted", { cause: signal.reason });
}

/**
 * Sleeps `ms`, ending early when `signal` aborts or `wake()` is called; resolves either way and
 * leaves no timer or listener behind once it ended. `done` never rejects.
 */
export function wakeableSleep(
  ms: number,
  signal: AbortSignal,
): { done: Promise<void>; wake(): void } {
  const ended = new AbortController();
  const onAbort = () => ended.abort();
  const stop = whenAborted(signal, onAbort);
  const done = (signal.aborted ? Promise.resolve() : sleep(ms, ended.signal))
    .catch(() => undefined)
    .finally(stop);
  return { done, wake: onAbort };
}

/**
 * Resolves when `work` settles or after `ms`, whichever comes first (true when it settled), and
 * leaves no timer behind. For waits on a local store that may be held up without end (an
 * IndexedDB write behind another tab's transaction that never finishes).
 */
export function settledWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = work.then(
    () => true,
    () => true,
  );
  return Promise.race([settled, late]).finally(() => clearTimeout(timer));
}

/** Callers waiting for one thing to happen (a queue to drain), settled all at once. */
export class Waiters {
  private readonly waiting = new Set<{ resolve(): void; reject(e: unknown): void }>();

  /** A promise settled by the next `resolveAll` or `rejectAll`. */
  add(): Promise<void> {
    return new Promise((resolve, reject) => this.waiting.add({ resolve, reject }));
  }

  resolveAll(): void {
    for (const w of this.waiting) w.resolve();
    this.waiting.clear();
  }

  rejectAll(error: unknown): void {
    for (const w of this.waiting) w.reject(error);
    this.waiting.clear();
  }
}

/**
 * `p`, or `ABORTED` as soon as `signal` aborts (at once when it has: `p` goes on; its outcome is
 * then ignored). `p`'s handlers are attached before anything else, so its rejection is never
 * unhandled, whatever ends the wait first (before, a signal that was no `AbortSignal` threw
 * before they were, and the catch-up `synced()` had started rejected unhandled at `close()`).
 */
export function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((resolve, reject) => {
    let stop: () => void = () => undefined;
    p.then(
      (v) => (stop(), resolve(v)),
      (e: unknown) => (stop(), reject(e)),
    );
    if (signal.aborted) return reject(abortError(signal));
    stop = whenAborted(signal, () => reject(abortError(signal)));
  });
}
