import { abortError, sleep, wakeableSleep } from "../backoff.js";
import { isStateSyncError, StateSyncError } from "../errors.js";
import type { StatusHub } from "./status.js";
import { whenAborted } from "../abort-watch.js";

/**
 * What ends the waits of an update before its entry is sent: anchoring on the log, an upgrade,
 * other writers' intents and turns, a catch-up between attempts.
 *
 * The kind of fault (a fresh-eyes trial): those waits ended only when what they waited for
 * came, so an update held back by another client's intents ignored its `signal` and its
 * `outcomeTimeoutMs` and outlived `close()`, which then failed it as if the log were
 * unreachable. Every such wait now takes these limits and ends as soon as one is reached; the
 * writer then rejects the update with what ended it ({@link unsent}). Nothing was sent yet, so
 * each of those errors is a definite failure (docs/guarantees.md, "Definite failures").
 */
export interface WaitLimits {
  /** When the waits end, ms since the epoch (the earliest deadline of a batch; Infinity: none). */
  readonly deadline: number;
  /** Aborts when an update's own signal aborts or the replica closes. */
  readonly signal: AbortSignal;
}

/** One update's own limits: its `signal`, and its deadline (its call + `outcomeTimeoutMs`). */
export interface UpdateLimits {
  readonly signal: AbortSignal | undefined;
  readonly outcomeTimeoutMs: number;
  /** ms since the epoch. */
  readonly deadline: number;
}

/** An update's limits from its options, its deadline `outcomeTimeoutMs` from now. */
export function limitsFromNow(options: Omit<UpdateLimits, "deadline">): UpdateLimits {
  // Field by field: a spread of the options cost µs an update (profile of the write path).
  const { signal, outcomeTimeoutMs } = options;
  return { signal, outcomeTimeoutMs, deadline: Date.now() + outcomeTimeoutMs };
}

/** Returned by {@link within} when the limits ended the wait first. */
export const ENDED: unique symbol = Symbol("limits ended the wait");

/** The limits of `updates` together, ending also on `closing`; `dispose` drops its listeners. */
export function waitLimits(
  updates: readonly UpdateLimits[],
  closing: AbortSignal,
): WaitLimits & { dispose(): void } {
  const sources = [closing];
  let deadline = Infinity;
  for (const u of updates) {
    if (u.signal) sources.push(u.signal);
    if (u.deadline < deadline) deadline = u.deadline;
  }
  // No update brought a signal (the common case): the replica's own is the one to end on, with
  // no controller and no listener per attempt (the write path runs this for every attempt).
  if (sources.length === 1) return { deadline, signal: closing, dispose: () => undefined };
  const controller = new AbortController();
  const abort = () => controller.abort();
  const stops: (() => void)[] = [];
  for (const s of sources) {
    if (s.aborted) controller.abort();
    else stops.push(whenAborted(s, abort));
  }
  return {
    deadline,
    signal: controller.signal,
    dispose: () => stops.forEach((stop) => stop()),
  };
}

/** Limits that end only when the replica closes (a compaction's waits). */
export function untilClosing(status: StatusHub): WaitLimits {
  return { deadline: Infinity, signal: status.signal };
}

/** True once the limits are reached. */
export function ended(limits: WaitLimits): boolean {
  return limits.signal.aborted || Date.now() >= limits.deadline;
}

/** Milliseconds left before the deadline, at least 0. */
export function remaining(limits: WaitLimits): number {
  return Math.max(0, limits.deadline - Date.now());
}

/** Sleeps `ms`, or less when the limits end first; never rejects. */
export function pause(ms: number, limits: WaitLimits): Promise<void> {
  return wakeableSleep(Math.min(ms, remaining(limits)), limits.signal).done;
}

/**
 * `work`'s outcome, or {@link ENDED} as soon as the limits end. `work` goes on (a catch-up, an
 * opening, an upgrade that others may share); its outcome is then ignored, never unhandled: its
 * handlers are attached before anything that could throw.
 */
export function within<T>(work: Promise<T>, limits: WaitLimits): Promise<T | typeof ENDED> {
  if (ended(limits)) {
    work.catch(() => undefined);
    return Promise.resolve(ENDED);
  }
  return new Promise<T | typeof ENDED>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stop: () => void = () => undefined;
    const done = () => (clearTimeout(timer), stop());
    work.then(
      (value) => (done(), resolve(value)),
      (e: unknown) => (done(), reject(e)),
    );
    const end = () => (done(), resolve(ENDED));
    if (Number.isFinite(limits.deadline)) timer = setTimeout(end, remaining(limits));
    stop = whenAborted(limits.signal, end);
  });
}

/**
 * Whether `e`, thrown by a wait before sending, only says that the wait ended: the signal
 * aborted, or the deadline passed while the log was not reachable yet (`UNAVAILABLE`, not a
 * problem that lasts until the setup changes). The caller then answers with {@link unsent},
 * whose `details` say so (before, an update of a replica that had never reached the log got
 * `UNAVAILABLE` with empty `details`: a fresh-eyes trial).
 */
export function waitEnded(e: unknown, limits: { signal: AbortSignal; deadline: number }): boolean {
  if (limits.signal.aborted) return true;
  if (!isStateSyncError(e, "UNAVAILABLE") || e.details.persistent === true) return false;
  return Date.now() >= limits.deadline;
}

/**
 * Why an update that was not sent may not go on, or undefined: the replica closed or stalled
 * (`CLOSED`, or the stall), its signal aborted (`ABORTED`), or its deadline passed
 * (`UNAVAILABLE`, `details.notSent`: nothing was appended, as when the log stayed unreachable).
 */
export function unsent(status: StatusHub, update: UpdateLimits): StateSyncError | undefined {
  if (status.stopped) return status.endError();
  if (update.signal?.aborted) return abortError(update.signal);
  const now = Date.now();
  if (now < update.deadline) return undefined;
  const waitedMs = now - (update.deadline - update.outcomeTimeoutMs);
  const why = status.notLiveBecause; // the connection's last failure, say
  const because = why ? `; the replica is ${status.status}: ${why.message}` : "";
  return new StateSyncError(
    "UNAVAILABLE",
    `nothing was appended: the update waited ${waitedMs} ms without being sent (for the log, or behind other writers), past its outcomeTimeoutMs (${update.outcomeTimeoutMs} ms)${because}`,
    {
      cause: why,
      details: {
        notSent: true,
        timedOut: true,
        waitedMs,
        outcomeTimeoutMs: update.outcomeTimeoutMs,
      },
    },
  );
}

/**
 * `work()` (a writer's catch-up after a conflict, a no-op's look at the log), tried again while
 * the log cannot serve it (`UNAVAILABLE`), 100 ms doubling to 5 s, until `limits` end (ENDED,
 * then rejected as any wait before sending). Before, one failure rejected the batch at once
 * (trials: a catch-up cut as a slow consumer; a no-op against a frozen server).
 */
export async function answered<T>(
  work: () => Promise<T>,
  limits: WaitLimits,
  status: StatusHub,
): Promise<T | typeof ENDED> {
  for (let failures = 0; ; failures++) {
    try {
      return await within(work(), limits);
    } catch (e) {
      if (!isStateSyncError(e, "UNAVAILABLE") || status.stopped) throw e;
      const backoff = sleep(Math.min(5_000, 100 * 2 ** failures));
      if ((await within(backoff, limits)) === ENDED) return ENDED;
    }
  }
}
