/**
 * Requests in flight when the connection drops end at once (jetstream-notes "Lost
 * acknowledgements").
 *
 * nats.js (both lines) does not fail a request whose connection drops under it: the answer was
 * meant for the old connection and never comes, and the request waits out its whole timeout,
 * though the client is back within milliseconds. A trial: an append cut right after its publish
 * waited 5 s (the default `requestTimeoutMs`) before its re-send, and under a burst with cuts
 * most of one writer's updates ended `UNKNOWN_OUTCOME` at their outcome deadline, one 5 s wait
 * after another. The {@link ConnectionGate} only failed requests made while offline.
 *
 * Here every JetStream request of a session ({@link cutShortApi}) settles as soon as the gate
 * sees the connection lost (`offline`, or `closed`) while it is in flight: `UNAVAILABLE` with
 * `details.disconnected` (never `notSent`: the request may have reached the server, so an
 * append's outcome is unknown, and its caller re-sends under the same message id or looks it up
 * after the reconnection, as after a timeout), or `CONNECTION_CLOSED` without `notSent` when
 * nats.js closed the connection for good. A request made while the gate is not `online` ends
 * the same way at once (nats.js may still send it once reconnected). An ordered consumer's
 * creation is one such request; its pulls (`fetch`, `consume`) are cut short by their readers
 * with {@link cutShort} (the range reader also stops a pull being delivered; once consuming, a
 * follower's consumer is re-created by nats.js).
 */
import { connectionClosedError, StateSyncError } from "../errors.js";
import type { JetStreamApi } from "./adapter.js";
import type { ConnectionGate } from "./connection-gate.js";
import type { StreamConfigLike } from "./nats-types.js";

/** The error of a request in flight when the connection was lost (`status`: what the gate said). */
function lostError(what: string, status: "offline" | "closed"): StateSyncError {
  const why = `${what}: the connection to NATS was lost while the request was in flight (its answer can no longer come); whether the server received it is unknown`;
  return status === "closed"
    ? connectionClosedError(why, { details: { disconnected: true } })
    : new StateSyncError("UNAVAILABLE", why, { details: { disconnected: true } });
}

/**
 * `work`, a request just made on the gate's connection, or its end as soon as the connection is
 * lost (see the module header). `work`'s own later failure is ignored; a value it yields after
 * the cut is handed to `onLate` (to release it).
 */
export function cutShort<T>(
  gate: ConnectionGate,
  work: Promise<T>,
  what: string,
  onLate?: (value: T) => void,
): Promise<T> {
  const now = gate.status;
  if (now !== "online") {
    work.then(
      (value) => onLate?.(value),
      () => undefined,
    );
    return Promise.reject(lostError(what, now));
  }
  // One promise and one listener a request (this runs for every append: issue 8's client cost).
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const unwatch = gate.watchStatus((status) => {
      if (status === "online" || settled) return;
      settled = true;
      unwatch();
      reject(lostError(what, status));
    });
    work.then(
      (value) => {
        if (settled) return onLate?.(value);
        settled = true;
        unwatch();
        resolve(value);
      },
      (err: unknown) => {
        if (settled) return;
        settled = true;
        unwatch();
        reject(err);
      },
    );
  });
}

/** `api` with each request ended at once when the connection is lost (see the module header). */
export function cutShortApi(api: JetStreamApi, gate: ConnectionGate): JetStreamApi {
  const cut =
    <A extends unknown[], T>(what: string, request: (...args: A) => Promise<T>) =>
    (...args: A): Promise<T> =>
      cutShort(gate, request(...args), what);
  const { streams, consumers, direct } = api;
  return {
    publish: cut("publish", (...a: Parameters<JetStreamApi["publish"]>) => api.publish(...a)),
    // nats.js asks for the stream's info (v3: creates the consumer too) before it answers.
    orderedConsumer: (stream, options) =>
      cutShort(gate, api.orderedConsumer(stream, options), "consumer create", (c) => {
        c.delete().catch(() => undefined);
      }),
    streams: {
      info: cut("stream info", (stream: string) => streams.info(stream)),
      add: cut("stream create", (config: Parameters<typeof streams.add>[0]) => streams.add(config)),
      delete: cut("stream delete", (stream: string) => streams.delete(stream)),
      getMessage: cut(
        "get message",
        (stream: string, q: Parameters<typeof streams.getMessage>[1]) =>
          streams.getMessage(stream, q),
      ),
      purge: cut("purge", (stream: string, o: { filter: string; seq: number }) =>
        streams.purge(stream, o),
      ),
      ...(streams.update && {
        update: cut("stream update", (name: string, c: StreamConfigLike) =>
          streams.update!(name, c),
        ),
      }),
    },
    ...(direct && {
      direct: {
        getMessage: cut(
          "direct get",
          (stream: string, q: Parameters<typeof direct.getMessage>[1]) =>
            direct.getMessage(stream, q),
        ),
      },
    }),
    consumers: {
      add: cut("consumer create", (stream: string, c: Parameters<typeof consumers.add>[1]) =>
        consumers.add(stream, c),
      ),
      delete: cut("consumer delete", (stream: string, name: string) =>
        consumers.delete(stream, name),
      ),
      next: cut("consumer next", (stream: string, name: string) => consumers.next(stream, name)),
    },
  };
}
