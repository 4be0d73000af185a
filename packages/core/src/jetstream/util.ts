import { StateSyncError } from "../errors.js";
import type { LogEntry } from "../log.js";
import type { JsMsgLike, MsgHdrsLike, StoredMsgLike } from "./nats-types.js";

/** The header JetStream deduplicates on. */
export const MSG_ID_HEADER = "Nats-Msg-Id";

/** A random token for consumer name prefixes (letters and digits only). */
export function randomToken(length = 10): string {
  const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  let out = "";
  for (const b of bytes) out += alphabet[b % alphabet.length];
  return out;
}

function messageIdOf(headers: MsgHdrsLike | undefined): string | undefined {
  const id = headers?.get(MSG_ID_HEADER);
  return id ? id : undefined;
}

/** A consumer message as a {@link LogEntry}. */
export function entryFromJsMsg(m: JsMsgLike): LogEntry {
  return { revision: m.seq, data: m.data, messageId: messageIdOf(m.headers) };
}

/** A directly read message as a {@link LogEntry}. */
export function entryFromStoredMsg(m: StoredMsgLike): LogEntry {
  return { revision: m.seq, data: m.data, messageId: messageIdOf(m.header) };
}

/**
 * Waits for `promise` at most `ms`; then rejects `UNAVAILABLE` (`what` in the message). Also
 * rejects as soon as `abort` does. A result arriving late is handed to `onLate` (to release it).
 */
export function withDeadline<T>(
  promise: Promise<T>,
  ms: number,
  what: string,
  options: { abort?: Promise<never>; onLate?: (value: T) => void } = {},
): Promise<T> {
  let settled = false;
  let timer: unknown;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StateSyncError("UNAVAILABLE", `${what}: no answer within ${ms} ms`)),
      ms,
    );
  });
  promise.then(
    (value) => {
      if (settled) options.onLate?.(value);
    },
    () => undefined,
  );
  const racers: Promise<T>[] = [promise, timeout];
  if (options.abort) racers.push(options.abort);
  return Promise.race(racers).finally(() => {
    settled = true;
    clearTimeout(timer);
  });
}

/** Resolves after `ms`, or at once when `wake` is called (returned with the promise). */
export function interruptibleSleep(ms: number): { done: Promise<void>; wake: () => void } {
  let wake: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  return { done, wake };
}

/** Exponential backoff with jitter, in ms: 250, 500, 1000, ... capped at `maxMs`. */
export function backoffMs(attempt: number, maxMs = 5_000): number {
  const base = Math.min(maxMs, 250 * 2 ** Math.min(attempt, 10));
  return base / 2 + Math.random() * (base / 2);
}
