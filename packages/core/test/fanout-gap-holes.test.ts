import { describe, expect, it } from "vitest";
import { isStateSyncError, StateSyncError } from "../src/errors.js";
import type { LogEntry } from "../src/log.js";
import { FanoutFollower, type FanoutSource } from "../src/jetstream/fanout-follower.js";
import { FATAL } from "../src/jetstream/follower.js";
import { toStateSyncError } from "../src/jetstream/nats-errors.js";
import type { CoreMsgLike } from "../src/jetstream/nats-types.js";
import type { StreamSession } from "../src/jetstream/stream-session.js";
import {
  backoffMs,
  interruptibleSleep,
  messageIdCodec,
  MSG_ID_HEADER,
} from "../src/jetstream/util.js";

/**
 * A fan-out follower never hands on a republished entry after a hole (fanout-follower.ts,
 * invariant 2). A trial (stop 33) found two ways it did:
 * - a compaction truncated the gap, and a second one purged past the latest revision the follower
 *   read next, so both reads found nothing and the held entry went on after the hole: replicas
 *   stalled `TRUNCATED` for good, and in a shared stream held a wrong state with no event;
 * - nats-server 2.9.10 republishes the entry after a refused publish with `Nats-Last-Sequence: 0`
 *   and the direct gets passed over the used-up sequences: the replica stalled `TRUNCATED`.
 * Here a fake stream plays both; the receiver records what it is handed.
 */

const enc = new TextEncoder();
const deps = {
  StateSyncError,
  isStateSyncError,
  toStateSyncError,
  FATAL,
  backoffMs: (n: number) => Math.min(20, backoffMs(n)),
  interruptibleSleep,
  MSG_ID_HEADER,
};

/** A fake stream: what `read` finds now (`stored`), and what `latest` answers, in turn. */
function fakeStream(o: {
  contiguous: boolean;
  stored: Map<number, LogEntry | "skipped">;
  latest: number[];
  /** The stream allows direct gets (else gaps are read through the range read). */
  direct?: boolean;
  /** What the identity check (`verify`) throws, when the stream is another incarnation. */
  replaced?: () => Error | undefined;
}) {
  let deliver: ((msg: CoreMsgLike) => void) | undefined;
  const reads: Array<[number, number]> = [];
  const asked = { latest: 0, verify: 0 };
  const session = {
    adapter: {
      subscribe: (
        _s: string,
        opts: { callback: (err: Error | null, msg: CoreMsgLike) => void },
      ) => {
        deliver = (msg) => opts.callback(null, msg);
        return { unsubscribe: () => undefined };
      },
    },
    liveSubject: "live.S",
    allowDirect: o.direct === true,
    api: {
      // A direct get with next_by_subj: the first message at or after `seq` (none at a used-up one).
      direct: {
        getMessage: async (_stream: string, q: { seq: number }) => {
          const at = [...o.stored.keys()]
            .filter((r) => r >= q.seq && o.stored.get(r) !== "skipped")
            .sort((a, b) => a - b)[0];
          if (at === undefined) return undefined;
          const e = o.stored.get(at) as LogEntry;
          return { seq: at, data: e.data, header: { get: () => "" } };
        },
      },
    },
  } as unknown as StreamSession;
  const source: FanoutSource = {
    gate: { watchStatus: () => () => undefined, connectionClosed: false } as never,
    stream: "S",
    subject: "S.state",
    contiguous: o.contiguous,
    ids: messageIdCodec(false, "S.state"),
    ready: async () => session,
    latest: async () => {
      asked.latest += 1;
      return o.latest.length > 1 ? o.latest.shift()! : o.latest[0]!;
    },
    verify: async () => {
      asked.verify += 1;
      const e = o.replaced?.();
      if (e) throw e;
    },
    async *read(from, to) {
      reads.push([from, to]);
      for (const [r, e] of [...o.stored].sort((a, b) => a[0] - b[0])) {
        if (r < from || r > to) continue;
        yield e === "skipped" ? { revision: r, data: new Uint8Array(), skipped: true } : e;
      }
    },
    tailCheckMs: 60_000,
    reconnectJitterMs: 0,
  };
  const republish = (revision: number, last: number) =>
    deliver!({
      data: enc.encode(`e${revision}`),
      headers: {
        get: (h: string) =>
          h === "Nats-Sequence" ? String(revision) : h === "Nats-Last-Sequence" ? String(last) : "",
      } as never,
    });
  /** A message on the republish subject with these header values, as anyone may publish it. */
  const publishRaw = (seq: string, last: string) =>
    deliver!({
      data: enc.encode("forged"),
      headers: {
        get: (h: string) => (h === "Nats-Sequence" ? seq : h === "Nats-Last-Sequence" ? last : ""),
      } as never,
    });
  return { session, source, republish, publishRaw, reads, asked };
}

const entry = (revision: number): LogEntry => ({ revision, data: enc.encode(`e${revision}`) });

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
}

describe("a fan-out follower and a hole before a republished entry", () => {
  it("a second compaction purged past the latest revision read: waits for the snapshot entry", async () => {
    // Delivered up to 47; the log then compacted twice: it starts at a snapshot entry at 65.
    const stored = new Map<number, LogEntry | "skipped">();
    for (let r = 1; r <= 47; r++) stored.set(r, entry(r));
    // `latest` answers 58 first (read just before the second compaction purged past it), then 70.
    const fake = fakeStream({ contiguous: false, stored, latest: [47, 58, 70] });
    const got: number[] = [];
    const follower = new FanoutFollower(
      fake.source,
      fake.session,
      48,
      {
        onEntry: (e) => got.push(e.revision),
      },
      deps,
    );
    await until(() => fake.asked.latest > 0); // the first tail check (nothing past 47)
    stored.clear();
    for (let r = 65; r <= 70; r++) stored.set(r, entry(r));
    fake.republish(60, 55); // stored before the compactions, republished late
    await until(() => got.includes(70));
    await follower.stop();
    expect(got).toEqual([65, 66, 67, 68, 69, 70]); // before: 60 first, after a hole
  });

  it("own stream, Nats-Last-Sequence 0 after a refused publish: direct gets pass over nothing", async () => {
    const stored = new Map<number, LogEntry | "skipped">();
    for (let r = 1; r <= 8; r++) stored.set(r, entry(r));
    const fake = fakeStream({ contiguous: true, stored, latest: [8], direct: true });
    const got: Array<[number, boolean]> = [];
    const follower = new FanoutFollower(
      fake.source,
      fake.session,
      9,
      {
        onEntry: (e) => got.push([e.revision, e.skipped === true]),
      },
      deps,
    );
    await until(() => fake.asked.latest > 0);
    for (const r of [9, 10, 11]) stored.set(r, "skipped"); // used up by refused publishes
    stored.set(12, entry(12));
    fake.republish(12, 0); // as 2.9.10 sends it
    await until(() => got.some(([r]) => r === 12));
    await follower.stop();
    expect(got).toEqual([
      [9, true],
      [10, true],
      [11, true],
      [12, false],
    ]); // before: 12 right after 8
  });
});

describe("a fan-out follower and a stream deleted and created again", () => {
  const replacedError = () =>
    new StateSyncError("LOG_REPLACED", "stream S was deleted and created again");

  it("a message that breaks the chain is checked before anything else is handed on", async () => {
    const stored = new Map<number, LogEntry | "skipped">();
    for (let r = 1; r <= 50; r++) stored.set(r, entry(r));
    let recreated = false;
    const fake = fakeStream({
      contiguous: true,
      stored,
      latest: [50],
      replaced: () => (recreated ? replacedError() : undefined),
    });
    const got: number[] = [];
    const errors: unknown[] = [];
    const follower = new FanoutFollower(
      fake.source,
      fake.session,
      51,
      { onEntry: (e) => got.push(e.revision), onError: (e) => errors.push(e) },
      deps,
    );
    await until(() => fake.asked.latest > 0);
    // The normal path: each message names the one heard before it; no request at all.
    for (let r = 51; r <= 60; r++) fake.republish(r, r - 1);
    await until(() => got.length === 10);
    expect(got).toEqual([51, 52, 53, 54, 55, 56, 57, 58, 59, 60]);
    expect(fake.asked.verify).toBe(0);
    // The stream is created again: its 1..60 are republished, then 61 names 60.
    recreated = true;
    for (let r = 1; r <= 61; r++) fake.republish(r, r - 1);
    await until(() => errors.length > 0);
    await follower.stop();
    expect(got.at(-1)).toBe(60); // before: 61 was handed on, at once
    expect(fake.asked.verify).toBe(1);
    expect((errors[0] as StateSyncError).code).toBe("LOG_REPLACED");
  });

  it("a first message that is old, then one that continues the revision: checked first", async () => {
    const stored = new Map<number, LogEntry | "skipped">();
    for (let r = 1; r <= 50; r++) stored.set(r, entry(r));
    const fake = fakeStream({ contiguous: false, stored, latest: [50], replaced: replacedError });
    const got: number[] = [];
    const errors: unknown[] = [];
    const follower = new FanoutFollower(
      fake.source,
      fake.session,
      51,
      { onEntry: (e) => got.push(e.revision), onError: (e) => errors.push(e) },
      deps,
    );
    await until(() => fake.asked.latest > 0);
    fake.republish(50, 0); // nothing heard before: an old entry may be another stream's
    fake.republish(51, 50);
    await until(() => errors.length > 0);
    await follower.stop();
    expect(got).toEqual([]);
    expect((errors[0] as StateSyncError).code).toBe("LOG_REPLACED");
  });
});

describe("a fan-out follower and header values no server sends", () => {
  it("drops a message whose sequences are not whole numbers, and follows on", async () => {
    // A trial: `Nats-Sequence: 3.5` (or `Infinity`) published on the republish subject was handed
    // on as revision 3.5, and every fan-out replica stalled TRUNCATED for good, writers included.
    const stored = new Map<number, LogEntry | "skipped">();
    for (let r = 1; r <= 3; r++) stored.set(r, entry(r));
    const fake = fakeStream({ contiguous: true, stored, latest: [3] });
    const got: number[] = [];
    const follower = new FanoutFollower(
      fake.source,
      fake.session,
      4,
      { onEntry: (e) => got.push(e.revision) },
      deps,
    );
    await until(() => fake.asked.latest > 0);
    for (const [seq, last] of [
      ["3.5", "3"],
      ["Infinity", "3"],
      ["4", "3.5"],
      ["4", "NaN"],
      ["4", "-1"],
      ["1e300", "3"],
    ]) {
      fake.publishRaw(seq!, last!);
    }
    stored.set(4, entry(4));
    fake.republish(4, 3);
    await until(() => got.includes(4));
    await follower.stop();
    expect(got).toEqual([4]);
  });
});
