import { describe, expect, it } from "vitest";
import type { ConnectionGate } from "../src/jetstream/connection-gate.js";
import { JetStreamFollower, type FollowSource } from "../src/jetstream/follower.js";
import type { ConsumerLike, ConsumerMessagesLike } from "../src/jetstream/nats-types.js";
import { messageIdCodec } from "../src/jetstream/util.js";

/**
 * A fresh-eyes trial: with the server gone, a live replica's `close()` took 2 s more than it
 * needed: the follower waited for its consumer's deletion, which cannot reach a server while the
 * connection is down. Outcome (an ordering, no timing): with a consumer whose deletion never
 * answers, `stop()` resolves before any timer could run while offline, and still waits online.
 */
const never = new Promise<never>(() => undefined);

function fakeSource(status: { value: "online" | "offline" }): {
  source: FollowSource;
  consuming: Promise<void>;
} {
  let consumed!: () => void;
  const consuming = new Promise<void>((r) => (consumed = r));
  const messages: ConsumerMessagesLike = {
    stop: () => undefined,
    close: () => never,
    closed: () => never,
    status: async () => (async function* () {})(),
    [Symbol.asyncIterator]: async function* () {},
  };
  const consumer: ConsumerLike = {
    fetch: () => never,
    consume: async () => {
      consumed();
      return messages;
    },
    delete: () => never,
  };
  const gate = {
    get status() {
      return status.value;
    },
    connectionClosed: false,
    onPermissionError: () => () => undefined,
    watchStatus: () => () => undefined, // a pull in flight listens for a cut (cut-short.ts)
    pulls: { batch: (n: number) => n },
  } as unknown as ConnectionGate;
  const source: FollowSource = {
    gate,
    stream: "S",
    subject: "S.log",
    timeoutMs: 5_000,
    ids: messageIdCodec(false, "S.log"),
    contiguous: true,
    ready: async () => ({
      api: { orderedConsumer: async () => consumer } as never,
      created: "t0",
    }),
    streamCreated: async () => "t0",
    entryExists: async () => true,
  };
  return { source, consuming };
}

/** Whether `p` settles within a few turns of the event loop (before a timer of 1 ms or more). */
async function settlesAtOnce(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void p.then(() => (settled = true));
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return settled;
}

/** A follower whose pull is running, on a connection whose status is `status.value`. */
async function startedFollower(status: {
  value: "online" | "offline";
}): Promise<JetStreamFollower> {
  const { source, consuming } = fakeSource(status);
  const follower = new JetStreamFollower(source, 1, { onEntry: () => undefined });
  await consuming;
  await settlesAtOnce(Promise.resolve()); // the follower takes the pull it asked for
  return follower;
}

describe("a follower's stop()", () => {
  it("does not wait for its consumer's deletion while the connection is down", async () => {
    const status = { value: "online" as "online" | "offline" };
    const follower = await startedFollower(status);
    status.value = "offline";
    expect(await settlesAtOnce(follower.stop())).toBe(true);
  });

  it("waits for it while the connection is up", async () => {
    const status = { value: "online" as "online" | "offline" };
    const follower = await startedFollower(status);
    const stopping = follower.stop();
    expect(await settlesAtOnce(stopping)).toBe(false);
    await stopping; // after RELEASE_WAIT_MS (2 s)
  });
});
