/**
 * The {@link JetStreamAdapter} of the nats.js v2 line (`nats` 2.x over TCP, `nats.ws` 1.x over
 * WebSocket), whose shapes the log was written against: mostly forwarding. It opens the client
 * with `nc.jetstream()` and the manager with `nc.jetstreamManager({ checkAPI: false })`
 * (jetstream-notes "Reading"), answers 10037 "no message found" as undefined, and reads one
 * pending message of a named consumer with a `no_wait` pull (`js.pull(stream, name, 0)`, which
 * rejects with code `"404"` when none is pending).
 */
import { publishRequests } from "./ack-requests.js";
import { endClosedDial } from "./closed-dial.js";
import type { JetStreamAdapter, JetStreamApi } from "./adapter.js";
import { apiErrorCode, JS_ERR } from "./nats-errors.js";
import { stopAfterStop } from "./ordered-consumer-v2.js";
import type {
  MsgQueryLike,
  NatsV2ConnectionLike,
  StreamConfigLike,
  StreamInfoLike,
} from "./nats-types.js";

type JetStreamStreamUpdate = (name: string, config: StreamConfigLike) => Promise<StreamInfoLike>;

/** Wraps a nats.js v2 connection (see the module header). Never closes it. */
export function natsV2Adapter(nc: NatsV2ConnectionLike): JetStreamAdapter {
  return {
    clientLine: "v2",
    connection: nc,
    get info() {
      return nc.info;
    },
    status: () => nc.status(),
    closed: () => nc.closed(),
    isClosed: () => nc.isClosed(),
    flush: nc.flush?.bind(nc),
    reconnect: nc.reconnect?.bind(nc),
    endClosedDial: () => endClosedDial(nc),
    receivedBytes: nc.stats ? () => nc.stats!().inBytes : undefined,
    subscribe: nc.subscribe?.bind(nc),
    open: async (timeoutMs, domain): Promise<JetStreamApi> => {
      const d = domain === undefined ? {} : { domain };
      const jsm = await nc.jetstreamManager({ checkAPI: false, timeout: timeoutMs, ...d });
      const js = nc.jetstream({ timeout: timeoutMs, ...d });
      // Appends without nats.js's request machinery where the connection allows (ack-requests.ts).
      const fast = publishRequests(nc);
      return {
        publish: fast
          ? (subject, data, options) =>
              fast.publish(subject, data, { timeout: timeoutMs, ...options })
          : (subject, data, options) => js.publish(subject, data, options),
        orderedConsumer: async (stream, options) => {
          const consumer = await js.consumers.get(stream, options);
          // nats.js retries a first creation that failed 30 times, 30 s apart, on a timer that
          // nothing stops: a replica whose open failed for want of a permission kept its process
          // alive for 15 minutes (a fresh-eyes trial). Its callers retry with backoff they stop.
          (consumer as { maxInitialReset?: number }).maxInitialReset = 0;
          return stopAfterStop(consumer);
        },
        streams: {
          info: (stream) => jsm.streams.info(stream),
          add: (config) => jsm.streams.add(config),
          delete: (stream) => jsm.streams.delete(stream),
          getMessage: async (stream, query) => {
            try {
              return await jsm.streams.getMessage(stream, query);
            } catch (err) {
              if (apiErrorCode(err) === JS_ERR.NO_MESSAGE_FOUND) return undefined;
              throw err;
            }
          },
          purge: (stream, options) => jsm.streams.purge(stream, options),
          ...(jsm.streams.update
            ? { update: jsm.streams.update.bind(jsm.streams) as JetStreamStreamUpdate }
            : {}),
          ...(jsm.streams.find ? { find: jsm.streams.find.bind(jsm.streams) } : {}),
        },
        ...(jsm.direct
          ? {
              direct: {
                getMessage: async (stream: string, query: MsgQueryLike) => {
                  try {
                    return await jsm.direct!.getMessage(stream, query);
                  } catch (err) {
                    // nats.js v2 rejects a direct get that matched nothing with code "404".
                    if ((err as { code?: string }).code === "404") return undefined;
                    throw err;
                  }
                },
              },
            }
          : {}),
        consumers: {
          add: (stream, config) => jsm.consumers.add(stream, config),
          delete: (stream, name) => jsm.consumers.delete(stream, name),
          next: async (stream, name) => {
            try {
              return await js.pull(stream, name, 0);
            } catch (err) {
              // 404 "no messages": nothing pending (purged since the consumer was made).
              if ((err as { code?: string }).code === "404") return undefined;
              throw err;
            }
          },
        },
      };
    },
  };
}
