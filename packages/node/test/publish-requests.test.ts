import { connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServer } from "@statesync/node";
import { publishRequests } from "../../core/src/jetstream/ack-requests.js";
import { toStateSyncError } from "../../core/src/jetstream/nats-errors.js";
import type { PublishOptionsLike } from "../../core/src/jetstream/nats-types.js";
import { uniqueStream } from "./helpers.js";

/**
 * statesync appends through its own publish path (`PublishRequests`, ack-requests.ts) instead of
 * nats.js v2's `js.publish`, whose request machinery cost about 40% of a raw publish's client
 * CPU. Every outcome must reach the engine as it did: each case runs both paths against the same
 * real server and compares what `toStateSyncError` makes of them (code, notSent, the conflict's
 * latest revision) and the acknowledgements.
 */
const CONFIG = `
max_payload: 65536
authorization {
  users = [
    { user: all, password: all }
    { user: nopub, password: nopub, permissions: { publish: { deny: ["DENIED.>"] } } }
    { user: noinbox, password: noinbox, permissions: { subscribe: { deny: ["_INBOX.>"] } } }
  ]
}
`;

let server: NatsServer;
const open: NatsConnection[] = [];
const as = async (user: string, extra: Record<string, unknown> = {}) => {
  const nc = await connect({ servers: server.url, user, pass: user, ...extra });
  open.push(nc);
  return nc;
};
beforeAll(async () => {
  server = await startNatsServer({ extraConfig: CONFIG });
});
afterAll(async () => {
  await Promise.all(open.map((nc) => nc.close().catch(() => undefined)));
  await server?.kill("SIGCONT").catch(() => undefined);
  await server?.stop();
});

type Path = "js.publish" | "statesync";
/** One publish by `path`: the ack, or the error as the engine sees it. */
async function publishBy(
  path: Path,
  nc: NatsConnection,
  subject: string,
  data: Uint8Array,
  options: PublishOptionsLike,
  expected?: number,
): Promise<unknown> {
  const fast = publishRequests(nc)!;
  try {
    return path === "js.publish"
      ? await nc.jetstream({ timeout: options.timeout ?? 5_000 }).publish(subject, data, options)
      : await fast.publish(subject, data, { timeout: 5_000, ...options });
  } catch (err) {
    const e = toStateSyncError(err, "append", expected);
    return {
      code: e.code,
      notSent: e.details?.notSent === true,
      latest: e.details?.latestRevision,
    };
  }
}

async function stream(nc: NatsConnection, config: Record<string, unknown> = {}): Promise<string> {
  const name = uniqueStream("PR");
  await (await nc.jetstreamManager()).streams.add({ name, subjects: [`${name}.x`], ...config });
  return `${name}.x`;
}

const data = new TextEncoder().encode('{"v":1}');
const paths: Path[] = ["js.publish", "statesync"];

describe("statesync's publish path answers as js.publish does", () => {
  it("acknowledges a publish, and a duplicate of its message id as a duplicate", async () => {
    const nc = await as("all");
    for (const path of paths) {
      const subject = await stream(nc);
      const first = await publishBy(path, nc, subject, data, {
        msgID: "a",
        expect: { lastSequence: 0 },
      });
      const again = await publishBy(path, nc, subject, data, { msgID: "a" });
      expect(first).toMatchObject({ seq: 1, duplicate: false });
      expect(again).toMatchObject({ seq: 1, duplicate: true });
    }
  });

  it("refuses a wrong expected last sequence as a conflict naming the latest revision", async () => {
    const nc = await as("all");
    const seen = [];
    for (const path of paths) {
      const subject = await stream(nc);
      await publishBy(path, nc, subject, data, {});
      await publishBy(path, nc, subject, data, {});
      seen.push(await publishBy(path, nc, subject, data, { expect: { lastSequence: 1 } }, 1));
    }
    expect(seen[0]).toMatchObject({ code: "CONFLICT", latest: 2 });
    expect(seen[1]).toEqual(seen[0]);
  });

  it("fails a subject no stream takes (no responders) as not sent", async () => {
    const nc = await as("all");
    const seen = [];
    for (const path of paths) seen.push(await publishBy(path, nc, "NOSTREAM.x", data, {}));
    expect(seen[0]).toEqual({ code: "UNAVAILABLE", notSent: true, latest: undefined });
    expect(seen[1]).toEqual(seen[0]);
  });

  it("refuses a payload over the server's max_payload and over the stream's max_msg_size", async () => {
    const nc = await as("all");
    const seen = [];
    for (const path of paths) {
      seen.push(await publishBy(path, nc, await stream(nc), new Uint8Array(70_000), {}));
      const small = await stream(nc, { max_msg_size: 100 });
      seen.push(await publishBy(path, nc, small, new Uint8Array(200), {}));
    }
    expect(seen[0]).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(seen[1]).toMatchObject({ code: "PAYLOAD_TOO_LARGE" });
    expect(seen.slice(2)).toEqual(seen.slice(0, 2));
  });

  it("fails a denied publish and a denied reply inbox as PERMISSION_DENIED", async () => {
    const admin = await as("all");
    const denied = `DENIED.${uniqueStream("D")}`;
    await (
      await admin.jetstreamManager()
    ).streams.add({ name: uniqueStream("PD"), subjects: [denied] });
    const inboxSubject = await stream(admin);
    const seen = [];
    for (const path of paths) {
      seen.push(await publishBy(path, await as("nopub"), denied, data, { timeout: 3_000 }));
      seen.push(await publishBy(path, await as("noinbox"), inboxSubject, data, { timeout: 3_000 }));
    }
    expect(seen[0]).toMatchObject({ code: "PERMISSION_DENIED" });
    expect(seen[1]).toMatchObject({ code: "PERMISSION_DENIED" });
    expect(seen.slice(2)).toEqual(seen.slice(0, 2));
  });

  it("times out on a server that stopped answering, and fails at once on a closed connection", async () => {
    const nc = await as("all", { maxReconnectAttempts: -1 });
    const subject = await stream(nc);
    const seen = [];
    await server.kill("SIGSTOP");
    try {
      for (const path of paths)
        seen.push(await publishBy(path, nc, subject, data, { timeout: 300 }));
    } finally {
      await server.kill("SIGCONT");
    }
    const closing = await as("all");
    const closed = await stream(closing);
    await closing.close();
    for (const path of paths) seen.push(await publishBy(path, closing, closed, data, {}));
    expect(seen[0]).toEqual({ code: "UNAVAILABLE", notSent: false, latest: undefined });
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[2]).toMatchObject({ code: "CONNECTION_CLOSED" });
    expect(seen[3]).toEqual(seen[2]);
  });
});
