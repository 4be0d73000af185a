import { JetStreamLog } from "@statesync/node";
import type { JetStreamClient, NatsConnection } from "nats";

/**
 * A raw JetStream stream created exactly as statesync creates its own (through `JetStreamLog`),
 * for reference publishes on the same subject layout and configuration.
 */
export async function rawStream(
  nc: NatsConnection,
  stream: string,
): Promise<{ js: JetStreamClient; subject: string }> {
  const log = await JetStreamLog.open({ connection: nc, stream });
  const subject = log.subject;
  await log.close();
  return { js: nc.jetstream({ timeout: 5_000 }), subject };
}

/**
 * Raw conditional appends, one at a time: `js.publish` with `Nats-Expected-Last-Sequence` (the
 * previous acknowledgement's sequence) and a `Nats-Msg-Id`, the two headers statesync sends.
 */
export async function rawConditionalLoop(
  js: JetStreamClient,
  subject: string,
  data: Uint8Array,
  ms: number,
  latencies?: number[],
): Promise<{ ops: number; elapsedMs: number }> {
  let last = (await js.publish(subject, data, { msgID: `raw-init-${Math.random()}` })).seq;
  let ops = 0;
  const start = performance.now();
  const end = start + ms;
  for (let t = start; t < end;) {
    const ack = await js.publish(subject, data, {
      expect: { lastSequence: last },
      msgID: `raw-${last}-${Math.random().toString(36).slice(2, 8)}`,
    });
    last = ack.seq;
    ops += 1;
    const t1 = performance.now();
    latencies?.push(t1 - t);
    t = t1;
  }
  return { ops, elapsedMs: performance.now() - start };
}

/**
 * The median stored size in bytes of the last `count` entries of `stream` (up to `last`): the
 * size of a typical update entry, which the raw reference publishes. A mean over the entries a
 * replica fetched is not: its own entries are mostly applied from the acknowledgement and not
 * counted, while its compaction entries (hundreds of KB) are, so the mean once came out at 77,020
 * bytes for a 209-byte update and the reference published that. Reads back to the stream's
 * first retained entry at most (a compaction truncates before it).
 */
export async function medianEntryBytes(
  nc: NatsConnection,
  stream: string,
  last: number,
  count = 31,
): Promise<number> {
  const jsm = await nc.jetstreamManager();
  const first = (await jsm.streams.info(stream)).state.first_seq;
  const sizes: number[] = [];
  for (let seq = last; seq >= first && seq > 0 && sizes.length < count; seq--) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => undefined);
    if (m) sizes.push(m.data.byteLength);
  }
  if (sizes.length === 0) throw new Error(`no entries in ${stream} to size the reference by`);
  sizes.sort((a, b) => a - b);
  return sizes[Math.floor(sizes.length / 2)]!;
}
