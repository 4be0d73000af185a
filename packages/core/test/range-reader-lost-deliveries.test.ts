import { describe, expect, it } from "vitest";
import type { ConnectionGate } from "../src/jetstream/connection-gate.js";
import type { ConsumerLike, ConsumerMessagesLike, JsMsgLike } from "../src/jetstream/nats-types.js";
import { PullBudget } from "../src/jetstream/pull-budget.js";
import { readRange, type RangeSource } from "../src/jetstream/range-reader.js";
import { messageIdCodec } from "../src/jetstream/util.js";

/**
 * A client that loses deliveries (nats.js 2.x's ordered `fetch()` dropped the messages it had
 * queued when its pull completed: found in CI) must never make a range read skip entries. In a
 * shared stream the subject's sequences have gaps anyway (other states' messages), so the read
 * cannot tell a lost entry by the stream sequence: it sees the consumer's delivery sequence jump
 * and starts a new consumer where it stands. Before, the first read below returned 2 and 8 to 24
 * (4 and 6 skipped) and no error.
 */
const SUBJECT = "S.state.a";
/** Every other sequence: the other states' messages lie between. */
const SEQS = Array.from({ length: 12 }, (_, i) => 2 * i + 2);

/** Messages of one pull as nats.js hands them on (possibly fewer than were delivered). */
function pulled(list: JsMsgLike[]): ConsumerMessagesLike {
  return {
    stop: () => undefined,
    close: async () => undefined,
    closed: async () => undefined,
    status: async () => (async function* () {})(),
    [Symbol.asyncIterator]: async function* () {
      yield* list;
    },
  };
}

/**
 * A fake stream holding this subject at {@link SEQS}. Each consumer delivers in order from its
 * start; `lose(consumer, delivery)` says which deliveries the client drops (they are consumed on
 * the server, never handed on).
 */
function fakeSource(lose: (consumer: number, delivery: number) => boolean) {
  const opened: number[] = [];
  const source: RangeSource = {
    api: {
      orderedConsumer: async (_stream: string, o: { opt_start_seq?: number }) => {
        const n = opened.push(o.opt_start_seq ?? 1);
        let pos = SEQS.findIndex((s) => s >= (o.opt_start_seq ?? 1));
        let delivery = 0;
        const consumer: ConsumerLike = {
          fetch: async (o) => {
            const max = o?.max_messages ?? 1;
            const out: JsMsgLike[] = [];
            while (pos >= 0 && pos < SEQS.length && out.length < max) {
              const seq = SEQS[pos++]!;
              delivery += 1;
              if (lose(n, delivery)) continue;
              const info = { streamSequence: seq, deliverySequence: delivery, consumer: `c${n}` };
              out.push({
                subject: SUBJECT,
                seq,
                data: new Uint8Array([seq]),
                headers: undefined,
                info: { ...info, pending: SEQS.length - pos },
              });
            }
            return pulled(out);
          },
          consume: async () => pulled([]),
          delete: async () => true,
        };
        return consumer;
      },
    } as unknown as RangeSource["api"],
    gate: {
      status: "online",
      disconnects: 0,
      lostSince: () => false,
      pulls: new PullBudget(() => 1_048_576),
      onPermissionError: () => () => undefined,
      onClose: () => () => undefined,
      watchStatus: () => () => undefined,
    } as unknown as ConnectionGate,
    stream: "S",
    subject: SUBJECT,
    contiguous: false,
    timeoutMs: 5_000,
    ids: messageIdCodec(true, SUBJECT),
    hasMore: async (from, to) => SEQS.some((s) => s >= from && s <= to),
  };
  return { source, opened };
}

async function readAll(source: RangeSource, from: number, to: number): Promise<number[]> {
  const out: number[] = [];
  for await (const e of readRange(source, from, to)) out.push(e.revision);
  return out;
}

describe("readRange with a client that loses deliveries (shared layout)", () => {
  it("reads every entry: a delivery sequence jump starts a new consumer where the read stands", async () => {
    // The first consumer's deliveries 2 and 3 (sequences 4 and 6) are lost.
    const { source, opened } = fakeSource((c, d) => c === 1 && (d === 2 || d === 3));
    expect(await readAll(source, 2, 24)).toEqual(SEQS);
    expect(opened).toEqual([2, 3]); // a new consumer from the revision after the last one read
  });

  it("takes the shared layout's own gaps as they are (no new consumer)", async () => {
    const { source, opened } = fakeSource(() => false);
    expect(await readAll(source, 1, 24)).toEqual(SEQS);
    expect(opened).toEqual([1]);
  });

  it("keeps reading when every consumer loses some, as long as each one gets further", async () => {
    // Each consumer loses its second delivery: 12 consumers, more than the 8 restarts allowed
    // in a row without an entry read between (before: UNAVAILABLE after the 9th).
    const { source, opened } = fakeSource((_, d) => d === 2);
    expect(await readAll(source, 2, 24)).toEqual(SEQS);
    expect(opened.length).toBeGreaterThan(9);
  });
});
