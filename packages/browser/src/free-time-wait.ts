/** The shortest tick of {@link afterFreeTime}, ms. */
const MIN_TICK_MS = 250;

/** The longest delay `setTimeout` takes (2^31 - 1 ms): a longer one fires at once. */
const MAX_DELAY_MS = 2 ** 31 - 1;

/**
 * Calls `expired` once `waitMs` of this thread's free time has passed, time in which it could
 * have run the answer it waits for: a bound on a wait for IndexedDB, which answers in a task of
 * this thread. The time is counted in ticks (a twentieth of `waitMs`, at least 250 ms), each
 * counting at most twice its length however late it fires: while the thread is busy (a long task
 * of the page: re-applying a queue of edits, parsing a bundle) no answer can arrive, so that
 * time is not IndexedDB's. A single 5 s timer there gave up on answers queued behind the busy
 * task (a browser trial: a tab busy for seconds while it loaded a queue of 2,000 records ran it in
 * memory, not durable). In a hidden tab a tick counts all the time it took: there the browser
 * runs timers late with the thread free (Chrome: once a second, and once a minute after five
 * minutes hidden for timers set from timer callbacks, as each tick is), and the cap made a 10 s
 * wait take ten wake-ups, about ten minutes. Returns a function that cancels the wait.
 */
export function afterFreeTime(waitMs: number, expired: () => void): () => void {
  const total = Math.min(Math.max(waitMs, 0), MAX_DELAY_MS);
  const tick = Math.min(Math.max(total / 20, MIN_TICK_MS), MAX_DELAY_MS);
  let counted = 0;
  let last = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let hidden = isHidden();
  const arm = () => {
    timer = setTimeout(
      () => {
        const now = Date.now();
        const throttled = hidden || isHidden(); // hidden when it was set or now
        counted += Math.min(Math.max(now - last, 0), throttled ? Infinity : 2 * tick);
        last = now;
        hidden = isHidden();
        if (counted >= total) expired();
        else arm();
      },
      Math.min(tick, total - counted),
    );
  };
  arm();
  return () => clearTimeout(timer);
}

/** True in a page that is hidden (a background tab); false in a visible one or a worker. */
function isHidden(): boolean {
  const doc = (globalThis as { document?: { visibilityState?: string } }).document;
  return doc?.visibilityState === "hidden";
}
