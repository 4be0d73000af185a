import { StateSyncError } from "../errors.js";
import type { LogEntry } from "../log.js";
import type { JsMsgLike, StoredMsgLike } from "./nats-types.js";

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

/**
 * How message ids are written to `Nats-Msg-Id` and read back. JetStream deduplicates ids per
 * stream, not per subject, so in the shared layout each state's ids are namespaced with its
 * subject (`<subject>:<id>`): two states writing the same id (say, the same genesis id) must not
 * be taken for re-sends of each other. Ids written by other programs read back as they are.
 */
export interface MessageIdCodec {
  encode(id: string): string;
  decode(header: string): string | undefined;
}

/** The codec of a layout: identity for an owned stream, `<subject>:` prefix when shared. */
export function messageIdCodec(shared: boolean, subject: string): MessageIdCodec {
  if (!shared) return { encode: (id) => id, decode: (h) => (h ? h : undefined) };
  const prefix = `${subject}:`;
  return {
    encode: (id) => prefix + id,
    decode: (h) => (!h ? undefined : h.startsWith(prefix) ? h.slice(prefix.length) : h),
  };
}

/** A revision the stream used up without storing anything (`LogEntry.skipped`). */
export function skippedEntry(revision: number): LogEntry {
  return { revision, data: new Uint8Array(0), skipped: true };
}

/** A consumer message as a {@link LogEntry}. */
export function entryFromJsMsg(m: JsMsgLike, ids: MessageIdCodec): LogEntry {
  return {
    revision: m.seq,
    data: m.data,
    messageId: ids.decode(m.headers?.get(MSG_ID_HEADER) ?? ""),
  };
}

/** A directly read message as a {@link LogEntry}. */
export function entryFromStoredMsg(m: StoredMsgLike, ids: MessageIdCodec): LogEntry {
  return { revision: m.seq, data: m.data, messageId: ids.decode(m.header.get(MSG_ID_HEADER)) };
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
  let timer: ReturnType<typeof setTimeout> | undefined;
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

/** Throws `VALIDATION` unless `value` is a number (not NaN); `name` names it in the message. */
export function checkRevision(value: number, name: string): void {
  if (typeof value !== "number" || Number.isNaN(value)) {
    throw new StateSyncError("VALIDATION", `${name} must be a number`);
  }
}
