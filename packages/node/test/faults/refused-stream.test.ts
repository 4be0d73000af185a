import { describe, expect, it } from "vitest";
import { StorageType, type NatsConnection } from "nats";
import { JetStreamLog, openSynchronizer } from "@statesync/node";
import { rejection, tcp, uniqueStream, useNatsServer } from "../helpers.js";
import { counter } from "../support/models.js";

/**
 * Found by a fresh-eyes trial: JetStream API errors that are permanent for the stream were read
 * as transient. A publish to a sealed stream (10109, refused at once, nothing stored) made
 * `update()` re-send for seconds and reject `UNKNOWN_OUTCOME`; `compact()` on a `deny_purge`
 * stream (10110) appended its snapshot entry and rejected `UNAVAILABLE` ("try again"). Both are
 * now final `STREAM_CONFIG` errors, and compaction refuses a `deny_purge` stream before writing.
 */
/** Creates `stream` (the own-stream layout's subject) with `deny_purge`. */
async function addDenyPurgeStream(nc: NatsConnection, stream: string): Promise<void> {
  const jsm = await nc.jetstreamManager();
  await jsm.streams.add({
    name: stream,
    subjects: [`${stream}.log`],
    deny_purge: true,
    storage: StorageType.File,
  });
}

describe("a stream that refuses writes or purges (real nats-server)", () => {
  const ctx = useNatsServer();

  it("an update on a stream sealed while the replica is live fails STREAM_CONFIG", async () => {
    const stream = uniqueStream("SEAL");
    const s = await openSynchronizer({
      stream,
      servers: ctx.server.url,
      model: counter,
      snapshots: false,
      compaction: false,
    });
    try {
      await s.update("increment", { by: 1 });
      const nc = await tcp(ctx.server.url);
      try {
        const jsm = await nc.jetstreamManager();
        const info = await jsm.streams.info(stream);
        const sealed = { ...info.config, sealed: true }; // not in nats.js 2's update type
        await jsm.streams.update(stream, sealed);
      } finally {
        await nc.close();
      }
      const err = await rejection(s.update("increment", { by: 1 }));
      expect(err.code).toBe("STREAM_CONFIG");
      expect(err.message).toMatch(/sealed/);
      expect(s.state.count).toBe(1);
    } finally {
      await s.close();
    }
  });

  it("compact() on a deny_purge stream fails STREAM_CONFIG and appends no snapshot", async () => {
    const stream = uniqueStream("DP");
    const nc = await tcp(ctx.server.url);
    try {
      await addDenyPurgeStream(nc, stream);
    } finally {
      await nc.close();
    }
    const d = await openSynchronizer({
      stream,
      servers: ctx.server.url,
      model: counter,
      snapshots: false,
      compaction: false,
    });
    try {
      await d.update("increment", { by: 1 });
      const err = await rejection(d.compact());
      expect(err.code).toBe("STREAM_CONFIG");
      expect(err.message).toMatch(/purge/);
      expect((await d.history()).map((h) => h.kind)).toEqual(["genesis", "update"]);
      await d.update("increment", { by: 1 }); // the stream stays writable
      expect(d.state.count).toBe(2);
    } finally {
      await d.close();
    }
  });

  it("the log's truncateBefore on a deny_purge stream fails STREAM_CONFIG (10110)", async () => {
    const stream = uniqueStream("DPL");
    const nc = await tcp(ctx.server.url);
    try {
      await addDenyPurgeStream(nc, stream);
      const log = new JetStreamLog({ connection: nc, stream });
      try {
        await log.appendUnconditional(new TextEncoder().encode("a"), "m1");
        await log.appendUnconditional(new TextEncoder().encode("b"), "m2");
        expect((await log.info()).truncationDenied).toBe(true);
        const err = await rejection(log.truncateBefore(2));
        expect(err.code).toBe("STREAM_CONFIG");
        expect(err.details.errCode).toBe(10110);
      } finally {
        await log.close();
      }
    } finally {
      await nc.close();
    }
  });
});
