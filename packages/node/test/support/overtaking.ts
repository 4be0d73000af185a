import {
  natsV2Adapter,
  type JetStreamAdapter,
  type JetStreamApi,
  type NatsV2ConnectionLike,
} from "@statesync/node";

/** The read requests of a log that {@link overtakingConnection} can run something ahead of. */
export type OvertakenRead = "consumer" | "get";

/**
 * A connection for `JetStreamLog` over `nc` (a `nats` 2.x connection) that awaits
 * `before(what)` ahead of each read request the log sends: a range read's ordered consumer
 * (`"consumer"`: after the read learned its bounds from stream info, before the first message is
 * delivered) and a point read (`"get"`, `STREAM.MSG.GET` or direct get). A `before` that compacts
 * the log with another replica puts a compaction exactly where one overtakes a read on a busy
 * log: the read's range was taken before the compaction, its first message after it.
 */
export function overtakingConnection(
  nc: NatsV2ConnectionLike,
  before: (what: OvertakenRead) => Promise<void>,
): JetStreamAdapter {
  const base = natsV2Adapter(nc);
  const open: JetStreamAdapter["open"] = async (timeoutMs, domain) => {
    const api = await base.open(timeoutMs, domain);
    const streams: JetStreamApi["streams"] = Object.create(api.streams, {
      getMessage: {
        value: async (stream: string, query: Parameters<typeof api.streams.getMessage>[1]) => {
          await before("get");
          return api.streams.getMessage(stream, query);
        },
      },
    });
    const direct: JetStreamApi["direct"] = api.direct && {
      getMessage: async (stream, query) => {
        await before("get");
        return api.direct!.getMessage(stream, query);
      },
    };
    return Object.create(api, {
      streams: { value: streams },
      direct: { value: direct },
      orderedConsumer: {
        value: async (stream: string, options: Parameters<JetStreamApi["orderedConsumer"]>[1]) => {
          await before("consumer");
          return api.orderedConsumer(stream, options);
        },
      },
    }) as JetStreamApi;
  };
  // Getters (`info`) stay live: the adapter is a prototype, not a copy.
  return Object.create(base, { open: { value: open } }) as JetStreamAdapter;
}

/**
 * A `before` for {@link overtakingConnection} that runs `compaction` ahead of the first `times`
 * range reads' consumers (the first `times` calls of kind `kinds`); counts what it ran.
 */
export function compactingBefore(
  compaction: () => Promise<void>,
  times: number,
  kinds: readonly OvertakenRead[] = ["consumer"],
): { before: (what: OvertakenRead) => Promise<void>; readonly ran: number; stop(): void } {
  let ran = 0;
  let stopped = false;
  return {
    before: async (what) => {
      if (stopped || ran >= times || !kinds.includes(what)) return;
      ran += 1;
      await compaction();
    },
    get ran() {
      return ran;
    },
    stop: () => void (stopped = true),
  };
}
