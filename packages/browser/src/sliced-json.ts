/**
 * JSON text of a large value in slices, so that encoding a multi-megabyte state never holds the
 * main thread for long (issue 10, case 9: one `JSON.stringify` plus a SHA-256 of a 4 MB state
 * took 100-350 ms in one task).
 *
 * The value is walked from the root; a subtree whose size is under {@link SMALL_SUBTREE} (counted
 * in nodes, and in characters of its strings) is encoded by the native `JSON.stringify` in one
 * go, a larger one is opened and its members encoded one by one. The text produced parses to
 * the same value as `JSON.stringify(value)` and is the same text for plain JSON data (same key
 * order: `Object.keys`; `toJSON` honoured; `undefined`, functions and symbols left out of
 * objects and `null` in arrays). It is made of whole JSON tokens, so a chunk never splits a
 * surrogate pair and chunks can be UTF-8 encoded one at a time.
 *
 * Safe only for values that nobody mutates while they are encoded across turns of the event
 * loop: the replica's state is deeply frozen (Immer), and a snapshot record refers to it.
 */

/** Size (nodes plus string characters / 64) under which a subtree is encoded natively at once. */
const SMALL_SUBTREE = 4_096;

/** Whether the subtree at `value` weighs less than `limit` (a walk that stops at the limit). */
function isSmall(value: unknown, limit: number): boolean {
  const stack: unknown[] = [value];
  let weight = 0;
  while (stack.length > 0) {
    const node = stack.pop();
    weight += 1;
    if (typeof node === "string") weight += node.length >> 6;
    else if (node !== null && typeof node === "object") {
      if (Array.isArray(node)) {
        if (weight + node.length > limit) return false;
        for (const item of node) stack.push(item);
      } else {
        const keys = Object.keys(node);
        if (weight + keys.length > limit) return false;
        for (const key of keys) {
          weight += key.length >> 6;
          stack.push((node as Record<string, unknown>)[key]);
        }
      }
    }
    if (weight > limit) return false;
  }
  return true;
}

/** The value `JSON.stringify` would encode for `value` under `key` (after `toJSON`). */
function toJsonValue(value: unknown, key: string): unknown {
  if (value !== null && typeof value === "object") {
    const toJSON = (value as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === "function") return (toJSON as (key: string) => unknown).call(value, key);
  }
  return value;
}

/** Whether `JSON.stringify` leaves `value` out (`undefined`, functions, symbols). */
const isSkipped = (value: unknown): boolean =>
  value === undefined || typeof value === "function" || typeof value === "symbol";

function* encode(value: unknown, open: Set<object>): Generator<string, void, undefined> {
  if (value === null || typeof value !== "object" || isSmall(value, SMALL_SUBTREE)) {
    yield JSON.stringify(value) ?? "null";
    return;
  }
  // A cycle through opened (large) values: JSON.stringify's error, before walking round it.
  if (open.has(value)) throw new TypeError("Converting circular structure to JSON");
  open.add(value);
  yield* encodeMembers(value, open);
  open.delete(value);
}

function* encodeMembers(value: object, open: Set<object>): Generator<string, void, undefined> {
  if (Array.isArray(value)) {
    yield "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ",";
      const item = toJsonValue(value[i], String(i));
      yield* isSkipped(item) ? ["null"] : encode(item, open);
    }
    yield "]";
    return;
  }
  yield "{";
  let first = true;
  for (const key of Object.keys(value)) {
    const member = toJsonValue((value as Record<string, unknown>)[key], key);
    if (isSkipped(member)) continue;
    yield `${first ? "" : ","}${JSON.stringify(key)}:`;
    first = false;
    yield* encode(member, open);
  }
  yield "}";
}

/**
 * The JSON text of `value` (as `JSON.stringify(value)`) as a sequence of chunks of whole tokens.
 * A consumer can stop between chunks and go on later (see {@link encodeJsonInSlices}). Throws
 * what `JSON.stringify` throws (a `BigInt`, a cycle: `TypeError`, possibly only after a cycle's
 * first chunks); a top-level value that `JSON.stringify` leaves out gives `"null"`.
 */
export function* jsonChunks(value: unknown): Generator<string, void, undefined> {
  const top = toJsonValue(value, "");
  yield* isSkipped(top) ? ["null"] : encode(top, new Set());
}

/** Gives the event loop a turn: `scheduler.yield()` where there is one, else a message task. */
export function yieldToEventLoop(): Promise<void> {
  const scheduler = (globalThis as { scheduler?: { yield?: () => Promise<void> } }).scheduler;
  if (typeof scheduler?.yield === "function") return scheduler.yield();
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(undefined);
  });
}

/** Options of {@link encodeJsonInSlices}. */
export interface SliceOptions {
  /** Most time, in ms, spent in one slice before giving the event loop a turn. Default 8. */
  sliceMs?: number;
  /** Characters of text handed to `onText` at a time (whole tokens, so a bit more). Default 65,536. */
  textChunk?: number;
}

/**
 * Encodes `value` to JSON in slices of about `sliceMs` of work, yielding to the event loop
 * between them, and hands the text to `onText` in pieces of about `textChunk` characters (for
 * hashing as it goes; `onText` runs inside the slices and should be cheap per piece). Resolves
 * to the whole text, equal to `JSON.stringify(value)` for plain JSON data.
 */
export async function encodeJsonInSlices(
  value: unknown,
  onText: (text: string) => void,
  options: SliceOptions = {},
): Promise<string> {
  const sliceMs = options.sliceMs ?? 8;
  const textChunk = options.textChunk ?? 65_536;
  const pieces: string[] = [];
  let pending: string[] = [];
  let pendingLength = 0;
  const flush = () => {
    if (pendingLength === 0) return;
    const text = pending.join("");
    pending = [];
    pendingLength = 0;
    onText(text);
    pieces.push(text);
  };
  let sliceStart = performance.now();
  let chunks = 0;
  let characters = 0;
  for (const chunk of jsonChunks(value)) {
    pending.push(chunk);
    pendingLength += chunk.length;
    if (pendingLength >= textChunk) flush();
    // performance.now() is cheap but not free: look at the clock every 64 chunks or 16 K
    // characters (a chunk's cost follows its length), whichever comes first.
    characters += chunk.length;
    if (++chunks >= 64 || characters >= 16_384) {
      chunks = 0;
      characters = 0;
      if (performance.now() - sliceStart >= sliceMs) {
        await yieldToEventLoop();
        sliceStart = performance.now();
      }
    }
  }
  flush();
  return pieces.join("");
}
