/**
 * `nextTask(fn)`: runs `fn` in a task of its own, after the current one and the microtasks it
 * queued (so that everything one socket read delivered has arrived): `setImmediate` where there
 * is one (Node), else a `MessageChannel` message (browsers: not throttled in a hidden tab,
 * unlike timers), else a timer. Callbacks queued before that task runs run in it, in order; each
 * must not throw.
 */
type Port = { onmessage: (() => void) | null; postMessage(message: unknown): void };
const g = globalThis as {
  setImmediate?: (fn: () => void) => unknown;
  MessageChannel?: new () => { port1: Port; port2: Port };
};

let queue: Array<() => void> = [];
let post: (() => void) | undefined;

function runQueued(): void {
  const callbacks = queue;
  queue = [];
  for (const fn of callbacks) fn();
}

function poster(): () => void {
  if (typeof g.setImmediate === "function") return () => void g.setImmediate!(runQueued);
  if (g.MessageChannel !== undefined) {
    const channel = new g.MessageChannel();
    channel.port1.onmessage = runQueued;
    return () => channel.port2.postMessage(undefined);
  }
  return () => void setTimeout(runQueued, 0);
}

/** Runs `fn` in the next task (see the module header). */
export function nextTask(fn: () => void): void {
  if (queue.push(fn) > 1) return;
  (post ??= poster())();
}
