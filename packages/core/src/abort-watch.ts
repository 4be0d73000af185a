/**
 * One `abort` listener per signal, however many operations wait on it. An app may hand one
 * `AbortSignal` (a component's unmount, a server's shutdown) to hundreds of updates in flight;
 * with a listener each, Node prints "MaxListenersExceededWarning: Possible EventTarget memory
 * leak detected. 11 abort listeners added to [AbortSignal]" into the app's output (found by a
 * fresh-eyes trial). Here the callbacks of one signal share a single listener, removed again
 * once none is left.
 */

/** The callbacks waiting on each signal (its one listener calls them). */
const waiting = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `callback` once when `signal` aborts (not at all when it already has: check `aborted`
 * first). Returns the function that stops waiting; call it when the operation ends another way.
 */
export function whenAborted(signal: AbortSignal, callback: () => void): () => void {
  let callbacks = waiting.get(signal);
  if (callbacks === undefined) {
    const set = new Set<() => void>();
    const listener = () => {
      waiting.delete(signal);
      for (const cb of set) cb();
      set.clear();
    };
    callbacks = Object.assign(set, { listener });
    waiting.set(signal, callbacks);
    signal.addEventListener("abort", listener, { once: true });
  }
  const set = callbacks as Set<() => void> & { listener: () => void };
  // Each call waits on its own entry, even for a callback function passed twice.
  const entry = () => callback();
  set.add(entry);
  return () => {
    if (!set.delete(entry) || set.size > 0) return;
    waiting.delete(signal);
    signal.removeEventListener("abort", set.listener);
  };
}
