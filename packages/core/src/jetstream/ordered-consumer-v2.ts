/**
 * A guard around nats.js 2.x's ordered consumer (`OrderedPullConsumerImpl`) for the work it goes
 * on doing after its `consume()` iterator was stopped. nats.js recreates an ordered consumer (a
 * missed heartbeat, a sequence gap, a server back with another store) in `reset()`, which
 * 1. creates the server consumer in a loop that retries every failure 5-15 s apart on a timer
 *    nothing can cancel, with no end: once the owner closed the connection, every retry fails and
 *    the loop keeps the process alive for good;
 * 2. then starts a new pull and binds it to the iterator (`setSource`) without checking that the
 *    iterator was stopped meanwhile: that pull's idle-heartbeat timer never stops ("aborting
 *    resetPending - connection is closed" every few seconds).
 * Found by a fresh-eyes trial: a replica stalled `LOG_REPLACED` (its server came back with
 * another store holding a stream of the same name), then closed; the process never exited.
 *
 * And its `fetch()` iterator ends as soon as the pull is complete, dropping the messages it had
 * queued and not yet handed on (found in CI: a range read over nats.ws skipped entries or ended
 * short, range-reader.ts): {@link keepQueuedOnEnd} queues the end behind them.
 *
 * The guard, on a consumer once its `consume()` was called (a range read's `fetch()` consumers
 * are otherwise left as nats.js runs them: each fetch's iterator ends by design):
 * - a recreation's failed creation is retried here, on a timer that does not keep the process
 *   alive (`unref`), so nats.js's own timer is never started; "stream not found" and the first
 *   creation (which the follower retries itself) are handed on as they are;
 * - once the iterator is stopped (or the connection closed for good), a creation not yet sent
 *   never settles: the loop ends with no timer left (garbage);
 * - a pull bound after the iterator stopped is stopped at once and its server consumer deleted;
 * - `delete()` first waits for the creations in flight, so that the follower's `stop()` (which
 *   waits for the deletion before the connection is closed) lets them end on a live connection.
 * It touches the instance only, through duck-typed fields; a client without them (another
 * version) is left as it is.
 */
import type { ConsumerLike } from "./nats-types.js";
import { backoffMs } from "./util.js";

type Add = (stream: string, config: unknown) => Promise<unknown>;
/** The fields of nats.js 2.x's `OrderedPullConsumerImpl` that the guard uses. */
interface OrderedConsumerV2 {
  api?: { add?: Add; nc?: { isClosed?(): boolean } };
  /** The `consume()` iterator; null until the first creation succeeded. */
  iter?: { done?: boolean } | null;
}
/** The fields of nats.js 2.x's `OrderedConsumerMessages` that the guard uses. */
interface OrderedMessagesV2 {
  done?: boolean;
  setSource?: (src: { stop(err?: Error): void }) => void;
  /** `QueuedIteratorImpl.push`: a function pushed runs when the iterator reaches it. */
  push?: (v: unknown) => void;
  /** The pull behind the iterator; it stops the iterator through `cleanupHandler` when done. */
  src?: { cleanupHandler?: (err?: Error) => void } | null;
}

/**
 * Makes a `fetch()` iterator end after the messages it queued, not before: nats.js 2.x stops the
 * ordered iterator as soon as its pull is complete (the source's `cleanupHandler`), and the
 * iterator then drops the messages pushed since the reader last took its queue (a reader that
 * awaits between entries, entries large enough to arrive in several reads). The end is queued
 * behind them instead, the way nats.js ends its own plain pulls. An error still ends it at once.
 */
function keepQueuedOnEnd(messages: OrderedMessagesV2): void {
  const src = messages.src;
  const end = src?.cleanupHandler;
  const push = messages.push;
  if (!src || typeof end !== "function" || typeof push !== "function") return;
  src.cleanupHandler = (err) => {
    if (err || messages.done) return end.call(src, err);
    push.call(messages, () => end.call(src, err));
  };
}

const NEVER = new Promise<never>(() => undefined);

/** Resolves after `ms` on a timer that does not keep a Node process alive. */
function idleSleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms) as unknown as { unref?: () => void };
    timer.unref?.();
  });
}

/** `consumer`, guarded as the module header says. */
export function stopAfterStop<C extends ConsumerLike>(consumer: C): C {
  const internal = consumer as unknown as OrderedConsumerV2;
  const api = internal.api;
  const add = api?.add;
  if (!api || typeof add !== "function") return consumer;
  /** `consume()` was called: a `fetch()` consumer (a range read) is left as nats.js runs it. */
  let consuming = false;
  // Stopped, or its connection closed for good (every creation would fail: no retry loop left).
  const stopped = () => internal.iter?.done === true || api.nc?.isClosed?.() === true;
  /** Creations sent and not answered yet. */
  const adding = new Set<Promise<unknown>>();
  const send = (stream: string, config: unknown): Promise<unknown> => {
    const p = add.call(api, stream, config);
    const done = () => adding.delete(p);
    adding.add(p);
    p.then(done, done);
    return p;
  };
  const guardedAdd = async (stream: string, config: unknown): Promise<unknown> => {
    if (!consuming) return add.call(api, stream, config);
    for (let attempt = 0; ; attempt++) {
      if (stopped()) return NEVER;
      try {
        return await send(stream, config);
      } catch (err) {
        const first = internal.iter == null;
        if (first || (err as Error | undefined)?.message === "stream not found") throw err;
      }
      await idleSleep(backoffMs(attempt));
    }
  };
  internal.api = Object.create(api, { add: { value: guardedAdd } }) as OrderedConsumerV2["api"];

  const remove = consumer.delete.bind(consumer);
  consumer.delete = async () => {
    await Promise.allSettled([...adding]);
    return remove();
  };

  const fetch = consumer.fetch.bind(consumer);
  consumer.fetch = async (options) => {
    const messages = await fetch(options);
    keepQueuedOnEnd(messages as OrderedMessagesV2);
    return messages;
  };

  const consume = consumer.consume.bind(consumer);
  consumer.consume = async (options) => {
    consuming = true;
    const messages = await consume(options);
    const m = messages as OrderedMessagesV2;
    const setSource = m.setSource;
    if (typeof setSource !== "function") return messages;
    m.setSource = (src) => {
      if (!m.done) return setSource.call(m, src);
      src.stop();
      void remove().catch(() => undefined);
    };
    return messages;
  };
  return consumer;
}
