import { afterEach, describe, expect, it, vi } from "vitest";
import {
  JetStreamLog,
  type ConsumerLike,
  type ConsumerMessagesLike,
  type JsMsgLike,
  type LogEntry,
  type NatsConnectionLike,
} from "@statesync/core";

/**
 * Regression tests for what the three-node cluster fault test found: after a stream leader
 * change, an ordered consumer's replica may lag the leader. It then reported `pending: 0` before
 * the end of the range (a read ended short, which the synchronizer takes for a truncation and
 * stalls on) and delivered a later sequence before earlier ones it did not have yet (the gap was
 * handed on: a replica stalled with TRUNCATED). A fake JetStream reproduces both in milliseconds.
 */

const SUBJECT = "S.log";
const enc = new TextEncoder();

/** What one consumer delivers: sequences in order, with the `pending` each message reports. */
type Plan = Array<{ seq: number; pending?: number }>;

interface FakeOptions {
  /** Sequences the stream holds (the leader's view). */
  seqs: number[];
  /** The plan of the n-th consumer created from `start`; default: everything from `start`. */
  plan?: (n: number, start: number, seqs: number[]) => Plan | undefined;
  /** An error the n-th consumer's pulled messages throw after they are delivered. */
  failure?: (n: number) => Error | undefined;
  /** What a publish answers (default: refuses, the fake is read-only). */
  publish?: () => Promise<unknown>;
  /** An error the creation of the n-th consumer throws. */
  consumerError?: (n: number) => Error | undefined;
  /** An error the n-th stream info (0: the one that opens the stream) throws instead. */
  infoError?: (n: number) => Error | undefined;
  /** The creation time the n-th stream info reports (default a fixed one). */
  created?: (n: number) => string;
  /** An error creating the stream throws instead. */
  addError?: () => Error | undefined;
  /** The cluster the server says it is in (`info.cluster`); none by default. */
  cluster?: string;
}

function message(seq: number, pending: number, deliverySequence: number): JsMsgLike {
  return {
    subject: SUBJECT,
    seq,
    data: enc.encode(`entry ${seq}`),
    headers: { get: (k: string) => (k === "Nats-Msg-Id" ? `m${seq}` : "") },
    info: { streamSequence: seq, deliverySequence, pending },
  };
}

function messagesOf(list: JsMsgLike[], failure?: Error): ConsumerMessagesLike {
  let stop: () => void = () => undefined;
  const closed = new Promise<void>((r) => (stop = r));
  return {
    async *[Symbol.asyncIterator]() {
      for (const m of list) yield m;
      if (failure) throw failure;
    },
    stop: () => stop(),
    close: async () => stop(),
    closed: () => closed,
    status: async () => ({
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          await closed;
          return { done: true as const, value: undefined };
        },
      }),
    }),
  };
}

/** A NatsConnectionLike over one owned stream whose consumers deliver what `plan` says. */
function fakeConnection(options: FakeOptions) {
  const seqs = options.seqs;
  let consumersCreated = 0;
  const notFound = () =>
    Object.assign(new Error("no message found"), {
      api_error: { code: 404, err_code: 10037, description: "no message found" },
    });
  const stored = (seq: number) => ({
    subject: SUBJECT,
    seq,
    data: enc.encode(`entry ${seq}`),
    header: { get: (k: string) => (k === "Nats-Msg-Id" ? `m${seq}` : "") },
  });
  const js = {
    publish: async () => {
      if (options.publish) return (await options.publish()) as never;
      throw new Error("read-only fake");
    },
    pull: async () => {
      throw new Error("not used");
    },
    consumers: {
      async get(_stream: string, o: { opt_start_seq?: number }): Promise<ConsumerLike> {
        const n = consumersCreated++;
        const refused = options.consumerError?.(n);
        if (refused) throw refused;
        const start = o.opt_start_seq ?? 1;
        const plan: Plan =
          options.plan?.(n, start, seqs) ?? seqs.filter((s) => s >= start).map((seq) => ({ seq }));
        let cursor = 0;
        let delivered = 0;
        const take = (max: number) => {
          const out: JsMsgLike[] = [];
          while (out.length < max && cursor < plan.length) {
            const p = plan[cursor++]!;
            out.push(message(p.seq, p.pending ?? plan.length - cursor, ++delivered));
          }
          return out;
        };
        return {
          fetch: async (f) => messagesOf(take(f?.max_messages ?? 100), options.failure?.(n)),
          consume: async (c) => {
            const list = take(Number.POSITIVE_INFINITY);
            const messages = messagesOf([]);
            let i = 0;
            const tick = () => {
              if (i >= list.length) return;
              c?.callback?.(list[i++]!);
              setTimeout(tick, 1);
            };
            setTimeout(tick, 1);
            return messages;
          },
          delete: async () => true,
        };
      },
    },
  };
  const info = () => ({
    created: "2026-01-01T00:00:00Z",
    config: {
      name: "S",
      subjects: [SUBJECT],
      retention: "limits",
      storage: "file",
      max_age: 0,
      max_msgs: -1,
      max_bytes: -1,
      max_msgs_per_subject: -1,
      duplicate_window: 120e9,
    },
    state: { messages: seqs.length, first_seq: seqs[0] ?? 0, last_seq: seqs.at(-1) ?? 0 },
  });
  let infos = 0;
  const jsm = {
    streams: {
      info: async () => {
        const n = infos++;
        const error = options.infoError?.(n);
        if (error) throw error;
        return { ...info(), created: options.created?.(n) ?? info().created };
      },
      add: async () => {
        const error = options.addError?.();
        if (error) throw error;
        return info();
      },
      delete: async () => true,
      purge: async () => ({ purged: 0 }),
      getMessage: async (
        _s: string,
        q: { seq?: number; next_by_subj?: string; last_by_subj?: string },
      ) => {
        const hit =
          q.last_by_subj !== undefined
            ? seqs.at(-1)
            : q.next_by_subj !== undefined
              ? seqs.find((s) => s >= q.seq!)
              : seqs.find((s) => s === q.seq);
        if (hit === undefined) throw notFound();
        return stored(hit);
      },
    },
    consumers: { add: async () => ({ name: "x", num_pending: 0 }), delete: async () => true },
  };
  const nc: NatsConnectionLike = {
    info: { version: "2.9.10", max_payload: 1024 * 1024, cluster: options.cluster },
    status: () => ({
      [Symbol.asyncIterator]: () => ({
        next: async () => ({ done: true as const, value: undefined as never }),
      }),
      stop() {},
    }),
    closed: () => new Promise(() => undefined),
    isClosed: () => false,
    jetstream: () => js,
    jetstreamManager: async () => jsm,
  };
  return { nc, consumersCreated: () => consumersCreated };
}

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

async function readAll(log: JetStreamLog, from: number, to: number): Promise<number[]> {
  const out: number[] = [];
  for await (const e of log.read(from, to)) out.push(e.revision);
  return out;
}

function followUntil(log: JetStreamLog, from: number, count: number): Promise<LogEntry[]> {
  return new Promise((resolve, reject) => {
    const seen: LogEntry[] = [];
    const f = log.follow(from, {
      onEntry: (e) => {
        seen.push(e);
        if (seen.length === count) void f.stop().then(() => resolve(seen));
      },
      onError: reject,
    });
    setTimeout(() => reject(new Error(`followed only ${seen.map((e) => e.revision)}`)), 5_000);
  });
}

describe("JetStreamLog over a consumer whose replica lags the stream leader", () => {
  it("read: a consumer that skips sequences the stream holds is replaced, nothing is skipped", async () => {
    const fake = fakeConnection({
      seqs: range(1, 10),
      // The first consumer's replica has 1-3 and 7-10 (4-6 still on their way to it).
      plan: (n) => (n === 0 ? [1, 2, 3, 7, 8, 9, 10].map((seq) => ({ seq })) : undefined),
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    expect(await readAll(log, 1, 10)).toEqual(range(1, 10));
    expect(fake.consumersCreated()).toBe(2);
    await log.close();
  });

  it("read: `pending: 0` before the end of the range does not end the read short", async () => {
    const fake = fakeConnection({
      seqs: range(1, 10),
      plan: (n, start) =>
        n === 0
          ? [
              ...range(start, 3).map((seq) => ({ seq, pending: seq === 3 ? 0 : undefined })),
              ...range(4, 10).map((seq) => ({ seq })),
            ]
          : undefined,
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    expect(await readAll(log, 1, 10)).toEqual(range(1, 10));
    await log.close();
  });

  it("read: a consumer that never delivers what the stream holds fails UNAVAILABLE, not short", async () => {
    const fake = fakeConnection({
      seqs: range(1, 10),
      plan: () => [1, 2, 3].map((seq) => ({ seq, pending: 0 })),
    });
    const log = await JetStreamLog.open({
      connection: fake.nc,
      stream: "S",
      requestTimeoutMs: 200,
    });
    const err = await readAll(log, 1, 10).catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe("UNAVAILABLE");
    await log.close();
  });

  it("follow: a jump over sequences the stream holds restarts the consumer there", async () => {
    const fake = fakeConnection({
      seqs: range(1, 10),
      plan: (n) => (n === 0 ? [1, 2, 3, 7, 8, 9, 10].map((seq) => ({ seq })) : undefined),
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    const seen = await followUntil(log, 1, 10);
    expect(seen.map((e) => e.revision)).toEqual(range(1, 10));
    expect(seen.map((e) => e.messageId)).toEqual(range(1, 10).map((i) => `m${i}`));
    await log.close();
  });

  it("follow: a jump over sequences the stream no longer holds (truncated) is handed on", async () => {
    const fake = fakeConnection({ seqs: range(7, 10) });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    const seen = await followUntil(log, 4, 4);
    expect(seen.map((e) => e.revision)).toEqual(range(7, 10));
    await log.close();
  });

  it("read: an error the pulled messages throw (503 no responders on a cluster) is UNAVAILABLE, not a raw NatsError", async () => {
    // Found by the cluster fault test in CI: opening a replica right after an R3 stream was
    // created, the pull's iterator threw nats.js's "no responders" (code 503); it escaped the
    // reader unmapped and the opener stalled on it instead of retrying.
    const noResponders = Object.assign(new Error("no responders"), { code: "503" });
    const fake = fakeConnection({
      seqs: range(1, 10),
      plan: (n) => (n === 0 ? [1, 2, 3].map((seq) => ({ seq, pending: 7 })) : undefined),
      failure: (n) => (n === 0 ? noResponders : undefined),
    });
    const log = new JetStreamLog({ connection: fake.nc, stream: "S", create: false });
    const error = await readAll(log, 1, 10).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "StateSyncError", code: "UNAVAILABLE" });
    expect(await readAll(log, 1, 10)).toEqual(range(1, 10)); // the next read succeeds
    await log.close();
  });

  it("append: an acknowledgement with sequence 0 (a duplicate still being stored) is UNAVAILABLE, not revision 0", async () => {
    // Found by the cluster fault test ("acknowledged at revision 0 but applied 0 times"): a
    // clustered nats-server before 2.11 answers a re-send whose original is still being
    // replicated with { seq: 0, duplicate: true } and no error (nats-server PR 5827).
    const answers: unknown[] = [
      { stream: "S", seq: 0, duplicate: true },
      { stream: "S" },
      { stream: "S", seq: 11, duplicate: true },
    ];
    const fake = fakeConnection({ seqs: range(1, 10), publish: async () => answers.shift() });
    const log = new JetStreamLog({ connection: fake.nc, stream: "S", create: false });
    const data = enc.encode("x");
    await expect(log.appendUnconditional(data, "m1")).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringContaining("still storing"),
    });
    await expect(log.appendUnconditional(data, "m1")).rejects.toMatchObject({
      code: "UNAVAILABLE",
      message: expect.stringContaining("malformed"),
    });
    expect(await log.appendUnconditional(data, "m1")).toEqual({ revision: 11, duplicate: true });
    await log.close();
  });

  it("info: a cluster's 'stream not found' just after the open is UNAVAILABLE (retried), later a deletion", async () => {
    // Found by the cluster fault test on 2.10.27 under load (docs/servers.md): right after an R3
    // stream was created, stream info answered 10059 on every node for a while, and replicas
    // that had just opened the stream took it for deleted and stalled. The clock is faked.
    vi.useFakeTimers({ toFake: ["Date"] });
    let known = true;
    const fake = fakeConnection({
      seqs: range(1, 3),
      cluster: "c",
      infoError: () => (known ? undefined : streamNotFound()),
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    known = false; // the answering node does not know the new stream yet
    await expect(log.info()).rejects.toMatchObject({ code: "UNAVAILABLE" });
    await expect(log.info()).rejects.toMatchObject({ code: "UNAVAILABLE" });
    known = true;
    expect((await log.info()).latestRevision).toBe(3);
    vi.setSystemTime(Date.now() + 11_000); // past the 10 s a cluster gets to settle
    known = false;
    await expect(log.info()).rejects.toMatchObject({ code: "LOG_REPLACED" });
    await log.close();
  });

  it("open: a create that another replica won (10058), then 'stream not found' on the read-back, is UNAVAILABLE", async () => {
    // The same race at the first open: the stream exists (the create says its name is in use),
    // the answering node does not know it yet. Not a deleted stream (TRUNCATED).
    let known = false;
    const fake = fakeConnection({
      seqs: range(1, 3),
      cluster: "c",
      infoError: () => (known ? undefined : streamNotFound()),
      addError: () =>
        Object.assign(new Error("stream name already in use"), {
          api_error: { code: 400, err_code: 10058, description: "stream name already in use" },
        }),
    });
    const log = new JetStreamLog({ connection: fake.nc, stream: "S" });
    await expect(log.info()).rejects.toMatchObject({ code: "UNAVAILABLE" });
    known = true;
    expect((await log.info()).latestRevision).toBe(3);
    await log.close();
  });

  it("info: a creation time of Go's zero (a server recovering its store after a restart) is no new stream", async () => {
    // Seen in CI: right after a SIGKILL and restart on the same store, nats-server answered stream
    // info with created 0001-01-01T00:00:00Z; the replica took it as another stream and stopped
    // LOG_REPLACED for good.
    const fake = fakeConnection({
      seqs: range(1, 3),
      created: (n) => (n === 0 ? "0001-01-01T00:00:00Z" : "2026-01-01T00:00:00Z"),
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    expect((await log.info()).latestRevision).toBe(3);
    expect((await log.info()).latestRevision).toBe(3);
    await log.close();
  });

  it("info: the identity names the stream's creation time, not Go's zero time a recovering server reports at first", async () => {
    // A zero-time identity reads as another log to a local snapshot (discarded) and to queued
    // updates (set aside: docs/offline.md, "One log"). The log asks again, for at most 2 s.
    const fake = fakeConnection({
      seqs: range(1, 3),
      created: (n) => (n === 3 ? "2026-01-01T00:00:00Z" : "0001-01-01T00:00:00Z"),
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    expect((await log.info()).identity).toMatch(/@2026-01-01T00:00:00Z$/); // the 4th answer
    expect((await log.info()).identity).toMatch(/@2026-01-01T00:00:00Z$/); // kept once learned
    await log.close();
  });

  it("info: a single server's 'stream not found' after the open is a deletion at once", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const fake = fakeConnection({
      seqs: range(1, 3),
      infoError: (n) => (n === 1 ? streamNotFound() : undefined),
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    await expect(log.info()).rejects.toMatchObject({ code: "LOG_REPLACED" });
    await log.close();
  });
});

afterEach(() => {
  vi.useRealTimers();
});

function streamNotFound(): Error {
  return Object.assign(new Error("stream not found"), {
    api_error: { code: 404, err_code: 10059, description: "stream not found" },
  });
}

describe("JetStreamLog: the stream deleted under a read or a follower (issue 10, case 3)", () => {
  // Every call of a log whose stream was deleted after it opened fails LOG_REPLACED
  // (docs/guarantees.md); reads and followers mapped the server's answer on their own (TRUNCATED).
  it("read: a pull answered 'stream not found' fails LOG_REPLACED", async () => {
    const fake = fakeConnection({
      seqs: range(1, 10),
      plan: (n) => (n === 0 ? [1, 2, 3].map((seq) => ({ seq, pending: 7 })) : undefined),
      failure: (n) => (n === 0 ? streamNotFound() : undefined),
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    const error = await readAll(log, 1, 10).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "StateSyncError", code: "LOG_REPLACED" });
    await log.close();
  });

  it("follow: a consumer refused with 'stream not found', the stream gone, ends the follow with LOG_REPLACED", async () => {
    const fake = fakeConnection({
      seqs: range(1, 3),
      consumerError: () => streamNotFound(),
      infoError: (n) => (n >= 1 ? streamNotFound() : undefined), // deleted after the open
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    const error = await new Promise((resolve) => {
      log.follow(4, { onEntry: () => undefined, onError: resolve });
    });
    expect(error).toMatchObject({ name: "StateSyncError", code: "LOG_REPLACED" });
    await log.close();
  });

  it("follow: a consumer refused once with 'stream not found' while the stream is there goes on", async () => {
    // A cluster node that does not know the stream yet. The follower checks the stream before it
    // takes the refusal for a deletion (nats.js no longer retries a first creation itself).
    const fake = fakeConnection({
      seqs: range(1, 3),
      consumerError: (n) => (n === 0 ? streamNotFound() : undefined),
    });
    const log = await JetStreamLog.open({ connection: fake.nc, stream: "S" });
    const seen: number[] = [];
    const errors: unknown[] = [];
    await new Promise<void>((resolve) => {
      log.follow(1, {
        onEntry: (e) => {
          seen.push(e.revision);
          if (e.revision === 3) resolve();
        },
        onError: (e) => errors.push(e),
      });
    });
    expect(seen).toEqual([1, 2, 3]);
    expect(errors).toEqual([]);
    await log.close();
  });
});
