/**
 * The JetStream calls of a v3 connection (`natsV3Adapter`'s `open`, adapter-v3.ts): loaded on
 * demand when a v3 connection opens its JetStream client, so that an app on the v2 line
 * (`nats.ws`, `@statesync/browser`'s default) does not load it (README, "Bundle size"). Imports
 * types only.
 */
import type { JetStreamApi } from "./adapter.js";
import type { JsMsgLike, MsgHdrsLike, MsgQueryLike } from "./nats-types.js";
import type { JetStreamV3Module, NatsV3ConnectionLike } from "./nats-v3-types.js";

/** A core NATS message of v3 (nats-core `Msg`, the parts used). */
interface MsgV3Like {
  readonly subject: string;
  readonly reply?: string | undefined;
  readonly data: Uint8Array;
  readonly headers?: (MsgHdrsLike & { readonly code: number }) | undefined;
}

/** A v3 connection's request (nats-core `NatsConnection.request`). */
interface Requester {
  request(
    subject: string,
    payload?: Uint8Array,
    options?: { timeout?: number; noMux?: boolean },
  ): Promise<MsgV3Like>;
}

const encoder = new TextEncoder();

/** The JetStream client and manager of `nc`, as `JetStreamAdapter.open` answers them. */
export async function openV3Api(
  nc: NatsV3ConnectionLike,
  module: JetStreamV3Module,
  timeoutMs: number,
  domain: string | undefined,
): Promise<JetStreamApi> {
  const d = domain === undefined ? {} : { domain };
  const jsm = await module.jetstreamManager(nc, { checkAPI: false, timeout: timeoutMs, ...d });
  const js = module.jetstream(nc, { timeout: timeoutMs, ...d });
  const apiPrefix = domain === undefined ? "$JS.API" : `$JS.${domain}.API`;
  return {
    publish: (subject, data, options) => js.publish(subject, data, options),
    orderedConsumer: (stream, o) =>
      js.consumers.get(stream, {
        filter_subjects: o.filterSubjects,
        ...(o.opt_start_seq !== undefined ? { opt_start_seq: o.opt_start_seq } : {}),
        ...(o.name_prefix !== undefined ? { name_prefix: o.name_prefix } : {}),
      }),
    streams: {
      info: (stream) => jsm.streams.info(stream),
      add: (config) => jsm.streams.add(config),
      delete: (stream) => jsm.streams.delete(stream),
      getMessage: async (stream, query) =>
        (await jsm.streams.getMessage(stream, query)) ?? undefined,
      purge: (stream, options) => jsm.streams.purge(stream, options),
      ...(jsm.streams.update ? { update: jsm.streams.update.bind(jsm.streams) } : {}),
      ...(jsm.streams.find ? { find: jsm.streams.find.bind(jsm.streams) } : {}),
    },
    ...(jsm.direct
      ? {
          direct: {
            getMessage: async (stream: string, query: MsgQueryLike) =>
              (await jsm.direct!.getMessage(stream, query)) ?? undefined,
          },
        }
      : {}),
    consumers: {
      add: (stream, config) => jsm.consumers.add(stream, config),
      delete: (stream, name) => jsm.consumers.delete(stream, name),
      next: (stream, name) =>
        nextNoWait(nc as unknown as Requester, apiPrefix, stream, name, timeoutMs),
    },
  };
}

/** One pending message of a named consumer, or undefined (404/408: none pending). */
async function nextNoWait(
  nc: Requester,
  apiPrefix: string,
  stream: string,
  name: string,
  timeoutMs: number,
): Promise<JsMsgLike | undefined> {
  const request = encoder.encode(JSON.stringify({ batch: 1, no_wait: true }));
  // Not muxed: the message arrives on the original subject (routed to the reply inbox by
  // subscription id), which the shared request inbox cannot match (v2's `js.pull` does the same).
  const m = await nc.request(`${apiPrefix}.CONSUMER.MSG.NEXT.${stream}.${name}`, request, {
    timeout: timeoutMs,
    noMux: true,
  });
  const code = m.headers?.code ?? 0;
  if (code === 404 || code === 408) return undefined;
  const ack = parseAckSubject(m.reply ?? "");
  if (code !== 0 || ack === undefined) {
    throw Object.assign(new Error(`unexpected answer to a pull (status ${code})`), {
      code: String(code),
    });
  }
  return {
    subject: m.subject,
    seq: ack.streamSequence,
    data: m.data,
    headers: m.headers,
    info: ack,
  };
}

/**
 * Stream and delivery sequence and pending count from a JetStream reply subject (ADR-15):
 * `$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>` or, newer,
 * `$JS.ACK.<domain>.<account>.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>[.<token>]`.
 */
function parseAckSubject(
  reply: string,
): { streamSequence: number; deliverySequence: number; pending: number } | undefined {
  const t = reply.split(".");
  if (t[0] !== "$JS" || t[1] !== "ACK") return undefined;
  const base = t.length === 9 ? 5 : t.length >= 11 ? 7 : -1;
  if (base < 0) return undefined;
  const [streamSequence, deliverySequence, , pending] = t.slice(base, base + 4).map(Number);
  if (!Number.isSafeInteger(streamSequence)) return undefined;
  return {
    streamSequence: streamSequence!,
    deliverySequence: deliverySequence ?? 0,
    pending: pending ?? 0,
  };
}
